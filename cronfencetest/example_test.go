package cronfencetest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/cronfencetest"
	"github.com/cronfence/cronfence/store/sqlite"
)

// dailyClose is the daily-close job's handler as a service defines it,
// with its work (closeTheDay) and its tables (db) handed in so that a test
// can replace them: the handler of the README's "Use it".
func dailyClose(db *sql.DB, closeTheDay func(context.Context) (float64, error)) cronfence.Handler {
	return func(ctx context.Context, run *cronfence.Run) error {
		amount, err := closeTheDay(ctx)
		if err != nil {
			return err
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		_, err = tx.ExecContext(ctx, `INSERT INTO commissions (key, amount) VALUES (?, ?) ON CONFLICT DO NOTHING`,
			run.IdempotencyKey("store-42"), amount)
		if err != nil {
			return err
		}
		if err := run.Complete(ctx, tx); err != nil {
			return err
		}
		return tx.Commit()
	}
}

// openExampleStore opens a migrated SQLite store in a temporary directory,
// with the handler's table beside cronfence's in its file.
func openExampleStore() (*sqlite.Store, func()) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "cronfencetest-example-")
	if err != nil {
		log.Fatal(err)
	}
	st, err := sqlite.Open(ctx, filepath.Join(dir, "cronfence.db"), nil)
	if err == nil {
		err = st.Migrate(ctx)
	}
	if err == nil {
		_, err = st.DB().ExecContext(ctx, `CREATE TABLE commissions (key TEXT PRIMARY KEY, amount REAL)`)
	}
	if err != nil {
		log.Fatal(err)
	}
	return st, func() { _ = st.Close(); _ = os.RemoveAll(dir) }
}

// printCommissions prints the handler's rows.
func printCommissions(db *sql.DB) {
	rows, err := db.Query(`SELECT key, amount FROM commissions ORDER BY key`)
	if err != nil {
		log.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		var amount float64
		if err := rows.Scan(&key, &amount); err != nil {
			log.Fatal(err)
		}
		fmt.Println(key, amount)
	}
	if err := rows.Err(); err != nil {
		log.Fatal(err)
	}
}

// A test of the daily-close handler, with the README's "Testing your
// handlers" code as its body: the first day's slot completes with its row,
// the second day's run loses its lease midway and writes nothing.
func Example_testingYourHandlers() {
	st, cleanup := openExampleStore()
	defer cleanup()

	t := &testing.T{} // a test's own, in a test
	testDailyClose(t, st)
	fmt.Println("test failed:", t.Failed())
	printCommissions(st.DB())
	// Output:
	// test failed: false
	// daily-close/2026-09-25T03:05:00Z/store-42 42
}

func testDailyClose(t *testing.T, st *sqlite.Store) {
	ctx := context.Background()
	job := cronfence.Job{Name: "daily-close", Schedule: "5 0 * * *", TimeZone: "America/Sao_Paulo", CompletesInTx: true}
	slot := time.Date(2026, 9, 25, 3, 5, 0, 0, time.UTC) // 00:05 in São Paulo

	// The day closes: its row and the slot's completion commit together
	// (CompletesInTx: a handler that returns nil without run.Complete fails).
	job.Handler = dailyClose(st.DB(), func(context.Context) (float64, error) { return 42, nil })
	res := cronfencetest.Run(ctx, t, st, job, &cronfencetest.RunOpts{Slot: slot})
	res.RequireCompleted(t)

	// The next day the process pauses while it closes the day, and another
	// replica takes the slot over: the fence refuses the write.
	job.Handler = dailyClose(st.DB(), func(ctx context.Context) (float64, error) {
		cronfencetest.TakeOver(ctx) // the pause, at the point the test picks
		return 42, nil
	})
	res = cronfencetest.Run(ctx, t, st, job, &cronfencetest.RunOpts{Slot: slot.AddDate(0, 0, 1)})
	res.RequireLeaseLost(t) // the handler returned ErrLeaseLost
	var rows int
	err := st.DB().QueryRowContext(ctx, `SELECT count(*) FROM commissions WHERE key = ?`,
		res.Run.IdempotencyKey("store-42")).Scan(&rows)
	if err != nil || rows != 0 {
		t.Fatalf("the stale run wrote %d rows (%v); want none", rows, err)
	}
}

// Run runs a handler once for the slot the test picks, under a real lease,
// and reads back what happened.
func ExampleRun() {
	st, cleanup := openExampleStore()
	defer cleanup()
	t := &testing.T{} // a test's own, in a test

	job := cronfence.Job{
		Name: "daily-close", Schedule: "5 0 * * *", TimeZone: "America/Sao_Paulo",
		Handler: dailyClose(st.DB(), func(context.Context) (float64, error) { return 42, nil }),
	}
	// Any instant picks the schedule's latest slot at or before it.
	res := cronfencetest.Run(context.Background(), t, st, job, &cronfencetest.RunOpts{
		Slot: time.Date(2026, 9, 25, 12, 0, 0, 0, time.UTC),
	})
	fmt.Println("error:", res.Err)
	fmt.Println("slot:", res.Run.Slot, "attempt", res.Run.Attempt, "generation", res.Run.Generation)
	fmt.Println("key:", res.Run.IdempotencyKey("store-42"))
	fmt.Println("slot status:", res.Slot.Status, "completed in the handler's transaction:", res.CompletedInTx)
	fmt.Println("run row success:", res.Row.Success)
	// Output:
	// error: <nil>
	// slot: 2026-09-25 03:05:00 +0000 UTC attempt 1 generation 1
	// key: daily-close/2026-09-25T03:05:00Z/store-42
	// slot status: completed completed in the handler's transaction: true
	// run row success: true
}

// TakeOver, called from inside the handler, makes another holder take the
// run's slot over at that point: the run's fence refuses its write from
// then on.
func ExampleTakeOver() {
	st, cleanup := openExampleStore()
	defer cleanup()
	t := &testing.T{} // a test's own, in a test

	res := cronfencetest.RunHandler(context.Background(), t, st, dailyClose(st.DB(), func(ctx context.Context) (float64, error) {
		taker := cronfencetest.TakeOver(ctx)
		fmt.Println("taken over by", taker.Owner, "at generation", taker.Generation)
		return 42, nil
	}), &cronfencetest.RunOpts{Slot: time.Date(2026, 9, 25, 3, 5, 0, 0, time.UTC)})

	fmt.Println("handler refused:", errors.Is(res.HandlerErr, cronfence.ErrLeaseLost))
	fmt.Println("slot:", res.Slot.Status, "at generation", res.Slot.Generation, "attempt", res.Slot.Attempts)
	printCommissions(st.DB())
	fmt.Println("test failed:", t.Failed())
	// Output:
	// taken over by cronfencetest:takeover at generation 2
	// handler refused: true
	// slot: running at generation 2 attempt 2
	// test failed: false
}
