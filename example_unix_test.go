//go:build unix

package cronfence_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/store"
)

// The README's "Use it" program, as written there (TestREADMEUseItIsTheExample
// keeps the two the same): a job that writes its effect and completes its
// slot in one transaction, a manual run, and a graceful shutdown on
// SIGTERM. Here the SIGTERM comes while the run is under way (closeTheDay
// sends it), and the run still commits: Stop gives it the shutdown grace.
func Example_useIt() {
	st, cleanup := openExampleStore(context.Background())
	defer cleanup()
	db := st.DB() // the handler's own table lives in the store's SQLite file
	if _, err := db.Exec(`CREATE TABLE commissions (key TEXT PRIMARY KEY, amount INTEGER)`); err != nil {
		log.Fatal(err)
	}

	useIt := func(st store.Store, db *sql.DB) error {
		// ctx ends on SIGTERM (a deploy) or Ctrl-C.
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()

		sched, err := cronfence.New(cronfence.Config{Store: st})
		if err != nil {
			return err
		}
		err = sched.Register(cronfence.Job{
			Name:          "daily-close",
			Schedule:      "5 0 * * *", // 00:05 every day
			TimeZone:      "America/Sao_Paulo",
			CatchUpWindow: time.Hour, // a deploy at 00:05 does not lose the run
			Handler: func(ctx context.Context, run *cronfence.Run) error {
				amount, err := closeTheDay(ctx) // the day's work: a deploy may come meanwhile
				if err != nil {
					return err
				}
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					return err
				}
				defer tx.Rollback()
				_, err = tx.ExecContext(ctx, `INSERT INTO commissions (key, amount) VALUES (?, ?) ON CONFLICT DO NOTHING`,
					run.IdempotencyKey("store-42"), amount) // "daily-close/2026-09-25T03:05:00Z/store-42"
				if err != nil {
					return err
				}
				// Fences this transaction (ErrLeaseLost: this run lost its
				// lease, roll back) and completes the slot in it: the rows and
				// the completion commit together, so the slot never runs again
				// once they are there, even if this process dies right after.
				if err := run.Complete(ctx, tx); err != nil {
					return err
				}
				return tx.Commit()
			},
		})
		if err != nil {
			return err
		}
		if err := sched.Start(ctx); err != nil {
			return err
		}
		// A manual run now, as an operator starts one (ErrAlreadyExecuting
		// while a run holds the job's lease on any replica).
		if _, err := sched.Trigger(ctx, "daily-close"); err != nil {
			return err
		}

		<-ctx.Done() // SIGTERM: time to stop
		// ctx has ended, so Stop gets a context of its own. Stop stops firing,
		// gives running handlers the shutdown grace (Config.ShutdownGrace,
		// 30s) to finish, then cancels them; stopCtx could cut it shorter.
		stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return sched.Stop(stopCtx)
	}
	if err := useIt(st, db); err != nil {
		log.Fatal(err)
	}

	var key string
	var amount int
	if err := db.QueryRow(`SELECT key, amount FROM commissions`).Scan(&key, &amount); err != nil {
		log.Fatal(err)
	}
	fmt.Println("committed:", key, amount)
	runs, err := st.RunList(context.Background(), store.RunListParams{Job: "daily-close"})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range runs {
		fmt.Printf("run: manual %v, attempt %d, success %v\n", r.Manual, r.Attempt, r.Success)
	}
	// Output:
	// committed: daily-close/manual-1/store-42 42
	// run: manual true, attempt 1, success true
}

// closeTheDay stands for the README handler's own work. Here a deploy
// comes in the middle of it: it sends this process SIGTERM and goes on
// once the signal has arrived.
func closeTheDay(context.Context) (int, error) {
	got := make(chan os.Signal, 1)
	signal.Notify(got, syscall.SIGTERM)
	defer signal.Stop(got)
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		return 0, err
	}
	<-got
	return 42, nil
}
