package cronfence_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/sqlite"
)

var silent = slog.New(slog.NewTextHandler(io.Discard, nil))

// Register jobs on every replica, start the scheduler, and each slot runs
// once across all of them. Here one replica on the embedded SQLite store
// registers a nightly job and an operator runs it by hand.
func ExampleScheduler() {
	ctx := context.Background()
	st, cleanup := openExampleStore(ctx)
	defer cleanup()

	sched, err := cronfence.New(cronfence.Config{Store: st, Logger: silent})
	if err != nil {
		log.Fatal(err)
	}
	done := make(chan struct{})
	err = sched.Register(cronfence.Job{
		Name:     "nightly-report",
		Schedule: "30 2 * * *",       // 02:30 every day...
		TimeZone: "America/New_York", // ...in New York: 03:00 on spring-forward day, once on fall-back day
		Handler: func(ctx context.Context, run *cronfence.Run) error {
			defer close(done)
			fmt.Printf("%s: %s, generation %d, attempt %d\n", run.Job, run.Origin, run.Generation, run.Attempt)
			return nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := sched.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer sched.Stop(ctx)

	if _, err := sched.Trigger(ctx, "nightly-report"); err != nil {
		log.Fatal(err)
	}
	<-done
	// Output:
	// nightly-report: manual, generation 1, attempt 1
}

// A handler fences each write with its run's generation inside the write's
// own transaction, and keys effects by the slot, never by the start time.
func ExampleRun_Fence() {
	ctx := context.Background()
	st, cleanup := openExampleStore(ctx)
	defer cleanup()
	db := st.DB()
	if _, err := db.ExecContext(ctx, `CREATE TABLE invoices (key TEXT PRIMARY KEY, generation INTEGER)`); err != nil {
		log.Fatal(err)
	}

	sched, err := cronfence.New(cronfence.Config{Store: st, Logger: silent})
	if err != nil {
		log.Fatal(err)
	}
	done := make(chan error, 1)
	err = sched.Register(cronfence.Job{
		Name:     "invoicing",
		Schedule: "@daily",
		Handler: func(ctx context.Context, run *cronfence.Run) error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			if err := run.Fence(ctx, tx); err != nil {
				return err // this run lost its lease: write nothing
			}
			_, err = tx.ExecContext(ctx, `INSERT INTO invoices VALUES (?, ?) ON CONFLICT DO NOTHING`,
				run.IdempotencyKey("customer-42"), run.Generation)
			if err == nil {
				err = tx.Commit()
			}
			done <- err
			return err
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := sched.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer sched.Stop(ctx)
	if _, err := sched.Trigger(ctx, "invoicing"); err != nil {
		log.Fatal(err)
	}
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	var key string
	var generation int64
	if err := db.QueryRowContext(ctx, `SELECT key, generation FROM invoices`).Scan(&key, &generation); err != nil {
		log.Fatal(err)
	}
	fmt.Println(key, generation)
	// Output:
	// invoicing/manual-1/customer-42 1
}

// With a catch-up window, a slot missed while no replica was running (a
// deploy, a crash) runs once at start-up: only the most recent one, only if
// nobody claimed it, and never one from before the job was first
// registered (here, by a replica two hours ago).
func ExampleJob_catchUpWindow() {
	ctx := context.Background()
	st, cleanup := openExampleStore(ctx)
	defer cleanup()
	// The job has existed for two hours: a replica registered it then and
	// has since stopped, as in a deploy.
	if _, err := st.JobRegister(ctx, store.JobRegisterParams{Jobs: []string{"hourly-sync"}, Now: time.Now().Add(-2 * time.Hour)}); err != nil {
		log.Fatal(err)
	}

	sched, err := cronfence.New(cronfence.Config{Store: st, Logger: silent})
	if err != nil {
		log.Fatal(err)
	}
	done := make(chan struct{})
	err = sched.Register(cronfence.Job{
		Name:          "hourly-sync",
		Schedule:      "@hourly",
		CatchUpWindow: 2 * time.Hour, // the last hour's slot was missed: run it now
		Handler: func(ctx context.Context, run *cronfence.Run) error {
			defer close(done)
			fmt.Printf("%s, late by under an hour: %v\n", run.Origin, time.Since(run.Slot) < time.Hour)
			return nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := sched.Start(ctx); err != nil {
		log.Fatal(err)
	}
	<-done
	if err := sched.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// catch_up, late by under an hour: true
}

// With CatchUp all, every slot missed inside the window runs, each once,
// oldest first, one after another: here the three hourly slots since the
// job was registered three hours ago by a replica that has since stopped.
func ExampleJob_catchUpAll() {
	ctx := context.Background()
	st, cleanup := openExampleStore(ctx)
	defer cleanup()
	if _, err := st.JobRegister(ctx, store.JobRegisterParams{Jobs: []string{"hourly-sync"}, Now: time.Now().Add(-3 * time.Hour)}); err != nil {
		log.Fatal(err)
	}
	sched, err := cronfence.New(cronfence.Config{Store: st, Logger: silent})
	if err != nil {
		log.Fatal(err)
	}
	slots := make(chan time.Time, 3)
	err = sched.Register(cronfence.Job{
		Name:          "hourly-sync",
		Schedule:      "@hourly",
		CatchUp:       cronfence.CatchUpAll,
		CatchUpWindow: 3 * time.Hour,
		Handler: func(ctx context.Context, run *cronfence.Run) error {
			slots <- run.Slot
			return nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := sched.Start(ctx); err != nil {
		log.Fatal(err)
	}
	a, b, c := <-slots, <-slots, <-slots
	if err := sched.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("three missed slots, oldest first:", a.Before(b) && b.Before(c))
	// Output:
	// three missed slots, oldest first: true
}

// Fence every write made under a lease inside the write's own transaction:
// a process that was paused past its TTL wakes up with a stale generation,
// and its write is refused instead of landing next to the new owner's. The
// unique key on the effect is the last layer.
func ExampleLease_Fence() {
	ctx := context.Background()
	s, cleanup := openExampleStore(ctx)
	defer cleanup()

	db := s.DB() // the handler's own tables live in the same file
	if _, err := db.ExecContext(ctx, `CREATE TABLE commissions (store_id INTEGER, day TEXT, amount REAL, PRIMARY KEY (store_id, day))`); err != nil {
		log.Fatal(err)
	}
	writeCommission := func(ctx context.Context, lease *cronfence.Lease, storeID int) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		if err := lease.Fence(ctx, tx); err != nil {
			return err // lost the lease: this write must not commit
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO commissions VALUES (?, '2026-09-25', 42.0) ON CONFLICT DO NOTHING`, storeID); err != nil {
			return err
		}
		return tx.Commit()
	}

	// Yesterday's run held generation 1; today's holds generation 2.
	var yesterday cronfence.Lease
	_, _ = cronfence.Lock(ctx, s, "daily-close", time.Minute, func(_ context.Context, lease *cronfence.Lease) error {
		yesterday = *lease
		return nil
	})
	_, err := cronfence.Lock(ctx, s, "daily-close", time.Minute, func(ctx context.Context, lease *cronfence.Lease) error {
		if err := writeCommission(ctx, lease, 42); err != nil {
			return err
		}
		// A process that held generation 1 wakes up from a long pause and
		// writes: the fence refuses it.
		err := writeCommission(ctx, &yesterday, 43)
		fmt.Println("stale write refused:", errors.Is(err, cronfence.ErrLeaseLost))
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}

	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM commissions`).Scan(&n); err != nil && !errors.Is(err, sql.ErrNoRows) {
		log.Fatal(err)
	}
	fmt.Println("rows written:", n)
	// Output:
	// stale write refused: true
	// rows written: 1
}

// openExampleStore opens a migrated SQLite store in a temporary directory,
// the embedded default on one host.
func openExampleStore(ctx context.Context) (*sqlite.Store, func()) {
	dir, err := os.MkdirTemp("", "cronfence-example-")
	if err != nil {
		log.Fatal(err)
	}
	s, err := sqlite.Open(ctx, filepath.Join(dir, "cronfence.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	return s, func() { _ = s.Close(); _ = os.RemoveAll(dir) }
}

// Lock runs a function under a cluster-wide lease: renewed while it runs,
// released when it returns. A second caller meets the held lease and does
// not run.
func ExampleLock() {
	ctx := context.Background()
	s, cleanup := openExampleStore(ctx)
	defer cleanup()

	ran, err := cronfence.Lock(ctx, s, "nightly-report", time.Minute, func(ctx context.Context, lease *cronfence.Lease) error {
		fmt.Println("running under generation", lease.Generation)

		again, err := cronfence.Lock(ctx, s, "nightly-report", time.Minute, func(context.Context, *cronfence.Lease) error {
			return errors.New("never runs: the lease is held")
		})
		fmt.Println("a second replica ran:", again, err)
		return nil
	})
	fmt.Println("ran:", ran, "error:", err)

	// The lease was released: the next run takes the next generation.
	_, _ = cronfence.Lock(ctx, s, "nightly-report", time.Minute, func(_ context.Context, lease *cronfence.Lease) error {
		fmt.Println("next run under generation", lease.Generation)
		return nil
	})
	// Output:
	// running under generation 1
	// a second replica ran: false <nil>
	// ran: true error: <nil>
	// next run under generation 2
}

// LockSlot runs a crontab line once per slot across hosts: here three
// hosts run the same yearly line one after another. The first fails and
// leaves the slot to the next, which runs it as attempt 2 and completes it
// in the transaction of its own effect; the third finds it completed.
func ExampleLockSlot() {
	ctx := context.Background()
	s, cleanup := openExampleStore(ctx)
	defer cleanup()
	if _, err := s.DB().Exec(`CREATE TABLE reports (key TEXT PRIMARY KEY)`); err != nil {
		log.Fatal(err)
	}

	l := cronfence.SlotLock{Name: "yearly-report", Schedule: "@yearly", MaxAttempts: 2}
	for _, host := range []string{"host-a", "host-b", "host-c"} {
		l.Owner = host // each host's own; OwnerID() by default
		res, err := cronfence.LockSlot(ctx, s, l, func(ctx context.Context, run *cronfence.Run) error {
			fmt.Printf("%s runs attempt %d under %s\n", host, run.Attempt, run.Lease)
			if host == "host-a" {
				return errors.New("report server unreachable")
			}
			tx, err := s.DB().BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			if _, err := tx.ExecContext(ctx, `INSERT INTO reports VALUES (?)`, run.IdempotencyKey()); err != nil {
				return err
			}
			// The effect and the slot's completion commit together.
			if err := run.Complete(ctx, tx); err != nil {
				return err
			}
			return tx.Commit()
		})
		switch {
		case err != nil:
			fmt.Printf("%s: slot %s: %v\n", host, res.Status, err)
		case res.Ran:
			fmt.Printf("%s: slot %s\n", host, res.Status)
		default:
			fmt.Printf("%s: not run, %s by %s\n", host, res.Refusal, res.Holder)
		}
	}
	// Output:
	// host-a runs attempt 1 under job:yearly-report
	// host-a: slot failed: report server unreachable
	// host-b runs attempt 2 under job:yearly-report
	// host-b: slot completed
	// host-c: not run, completed by host-b
}

// An Observer sees what the scheduler does as it happens: the hook for
// metrics and alert delivery (the cronfence binary feeds Prometheus and a
// webhook from it). Observe must be quick: it runs on the scheduler's
// goroutines.
func ExampleObserver() {
	ctx := context.Background()
	st, cleanup := openExampleStore(ctx)
	defer cleanup()

	ended := make(chan struct{})
	observer := cronfence.ObserverFunc(func(e cronfence.Event) {
		switch e := e.(type) {
		case cronfence.RunStartEvent:
			fmt.Printf("start %s: %s, generation %d\n", e.Job, e.Origin, e.Generation)
		case cronfence.RunEndEvent:
			fmt.Printf("end %s: %s, recorded %v\n", e.Job, e.Outcome, e.Recorded)
			close(ended)
		}
	})
	sched, err := cronfence.New(cronfence.Config{Store: st, Logger: silent, Observer: observer})
	if err != nil {
		log.Fatal(err)
	}
	err = sched.Register(cronfence.Job{
		Name:     "export",
		Schedule: "0 3 * * *",
		Handler: func(ctx context.Context, run *cronfence.Run) error {
			return errors.New("the export target is read-only")
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := sched.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer sched.Stop(ctx)

	if _, err := sched.Trigger(ctx, "export"); err != nil {
		log.Fatal(err)
	}
	<-ended
	// Output:
	// start export: manual, generation 1
	// end export: failure, recorded true
}

// Schedules that live in the store are created, changed and deleted while
// the replicas run: a schedule per tenant, say. Every replica registers
// the kinds of handler it runs; a stored schedule names its kind and
// carries the handler's arguments. An update names the version it read:
// a stale one is a conflict, never a lost update.
func ExampleScheduler_Schedules() {
	ctx := context.Background()
	st, cleanup := openExampleStore(ctx)
	defer cleanup()

	sched, err := cronfence.New(cronfence.Config{Store: st, Logger: silent})
	if err != nil {
		log.Fatal(err)
	}
	done := make(chan struct{})
	err = sched.RegisterKind("send-report", func(ctx context.Context, run *cronfence.Run) error {
		var args struct {
			Tenant int `json:"tenant"`
		}
		if err := json.Unmarshal(run.Args, &args); err != nil {
			return err
		}
		fmt.Printf("%s: the report of tenant %d\n", run.Job, args.Tenant)
		close(done)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}

	schedules := sched.Schedules()
	sc, err := schedules.Create(ctx, "report-tenant-7", cronfence.ScheduleSettings{
		Spec: "0 6 * * *", TimeZone: "Europe/Lisbon", Kind: "send-report", Args: json.RawMessage(`{"tenant":7}`),
	}, "alice")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sc.Name, "version", sc.Version, sc.Spec)

	weekdays := sc.ScheduleSettings
	weekdays.Spec = "30 6 * * 1-5"
	sc, err = schedules.Update(ctx, sc.Name, sc.Version, weekdays, "bob")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sc.Name, "version", sc.Version, sc.Spec)

	_, err = schedules.Update(ctx, sc.Name, 1, weekdays, "carol") // read before bob's edit
	fmt.Println("stale version refused:", errors.Is(err, cronfence.ErrScheduleConflict))

	if err := sched.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer sched.Stop(ctx)
	if _, err := sched.Trigger(ctx, "report-tenant-7"); err != nil {
		log.Fatal(err)
	}
	<-done
	// Output:
	// report-tenant-7 version 1 0 6 * * *
	// report-tenant-7 version 2 30 6 * * 1-5
	// stale version refused: true
	// report-tenant-7: the report of tenant 7
}

// ExampleSchedules runs the README's snippet.
func ExampleSchedules() {
	ctx := context.Background()
	st, cleanup := openExampleStore(ctx)
	defer cleanup()
	sched, err := cronfence.New(cronfence.Config{Store: st, Logger: silent})
	if err != nil {
		log.Fatal(err)
	}
	sc, err := readmeSchedules(ctx, sched, func(context.Context, *cronfence.Run) error { return nil })
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sc.Name, "version", sc.Version, sc.Spec)
	// Output:
	// report-tenant-7 version 2 30 6 * * 1-5
}

// readmeSchedules is README.md's "Schedules that change at runtime" snippet.
func readmeSchedules(ctx context.Context, sched *cronfence.Scheduler, sendReport cronfence.Handler) (cronfence.Schedule, error) {
	sched.RegisterKind("send-report", sendReport) // on every replica; sendReport reads run.Args

	sc, err := sched.Schedules().Create(ctx, "report-tenant-7", cronfence.ScheduleSettings{
		Spec: "0 6 * * *", Kind: "send-report", Args: json.RawMessage(`{"tenant":7}`),
	}, "alice")
	if err != nil {
		return sc, err
	}
	sc.Spec = "30 6 * * 1-5"
	sc, err = sched.Schedules().Update(ctx, sc.Name, sc.Version, sc.ScheduleSettings, "bob") // stale version: ErrScheduleConflict
	return sc, err
}

// ExampleSchedules_tour runs docs/schedules.md's Go snippet.
func ExampleSchedules_tour() {
	ctx := context.Background()
	st, cleanup := openExampleStore(ctx)
	defer cleanup()
	sched, err := cronfence.New(cronfence.Config{Store: st, Logger: silent})
	if err != nil {
		log.Fatal(err)
	}
	sendReport := func(ctx context.Context, run *cronfence.Run, tenant int) error { return nil }
	if err := schedulesTour(ctx, sched, sendReport); err != nil {
		log.Fatal(err)
	}
	// Output:
	// 1 schedules, 2 changes
}

// schedulesTour is docs/schedules.md's "In Go" snippet.
func schedulesTour(ctx context.Context, sched *cronfence.Scheduler, sendReport func(context.Context, *cronfence.Run, int) error) error {
	sched.RegisterKind("send-report", func(ctx context.Context, run *cronfence.Run) error {
		var args struct {
			Tenant int `json:"tenant"`
		}
		if err := json.Unmarshal(run.Args, &args); err != nil {
			return err
		}
		return sendReport(ctx, run, args.Tenant) // fence its writes with run.Fence, as any handler
	})

	schedules := sched.Schedules()
	sc, err := schedules.Create(ctx, "report-tenant-7", cronfence.ScheduleSettings{
		Spec: "0 6 * * *", TimeZone: "Europe/Lisbon", Kind: "send-report", Args: json.RawMessage(`{"tenant":7}`),
	}, "alice")
	if err != nil {
		return err
	}
	weekdays := sc.ScheduleSettings
	weekdays.Spec = "30 6 * * 1-5"
	sc, err = schedules.Update(ctx, sc.Name, sc.Version, weekdays, "bob") // a stale sc.Version: ErrScheduleConflict
	if err != nil {
		return err
	}
	page, err := schedules.List(ctx, "", 100) // name order; the next page starts after the last name
	if err != nil {
		return err
	}
	changes, err := schedules.Audit(ctx, "", 0, 50) // newest first, every schedule's
	if err != nil {
		return err
	}
	fmt.Println(len(page), "schedules,", len(changes), "changes")
	_, err = schedules.Delete(ctx, sc.Name, sc.Version, "bob")
	return err
}

// TestTheSchedulesSnippetsAreTheExamples: the README's and
// docs/schedules.md's Go snippets are the code the examples run.
func TestTheSchedulesSnippetsAreTheExamples(t *testing.T) {
	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(example), "\n")
	for _, doc := range []struct{ file, heading string }{
		{"README.md", "### Schedules that change at runtime"},
		{"docs/schedules.md", "## In Go"},
	} {
		text, err := os.ReadFile(doc.file)
		if err != nil {
			t.Fatal(err)
		}
		snippet, err := firstGoBlock(string(text), doc.heading)
		if err != nil {
			t.Fatal(err)
		}
		if err := containsIndented(lines, snippet); err != nil {
			t.Errorf("%s's snippet under %q is not example_test.go's code: %v", doc.file, doc.heading, err)
		}
	}
}

// Backfill the slots of a range that never ran: the replica that asks
// (it registers the job) drives it, one slot at a time, each once; a
// completed slot is never run again. BackfillPlan says first what it
// would do with each slot.
func ExampleScheduler_Backfill() {
	ctx := context.Background()
	st, cleanup := openExampleStore(ctx)
	defer cleanup()
	sched, err := cronfence.New(cronfence.Config{Store: st, Logger: silent})
	if err != nil {
		log.Fatal(err)
	}
	ran := make(chan cronfence.Origin, 3)
	err = sched.Register(cronfence.Job{
		Name:     "hourly-report",
		Schedule: "@hourly",
		Handler: func(ctx context.Context, run *cronfence.Run) error {
			ran <- run.Origin
			return nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := sched.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer sched.Stop(ctx)

	to := time.Now().UTC().Truncate(time.Hour).Add(-24 * time.Hour)
	p := cronfence.BackfillParams{From: to.Add(-3 * time.Hour), To: to, By: "ana"}
	plan, err := sched.BackfillPlan(ctx, "hourly-report", p)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("slots:", len(plan), "first:", plan[0].Outcome)
	b, err := sched.Backfill(ctx, "hourly-report", p)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("origins:", <-ran, <-ran, <-ran)
	for b.State == store.BackfillRunning {
		time.Sleep(10 * time.Millisecond)
		if b, err = sched.GetBackfill(ctx, b.ID); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println(b.State, "ran:", b.Counts.Ran)
	// Output:
	// slots: 3 first: run
	// origins: backfill backfill backfill
	// done ran: 3
}

// Exclusion windows: a job's own (Exclude) and the scheduler's for every
// job (Config.Exclude). Its slots inside one are recorded skipped, reason
// excluded, and its next slot passes over them.
func ExampleJob_exclude() {
	ctx := context.Background()
	st, cleanup := openExampleStore(ctx)
	defer cleanup()
	sched, err := cronfence.New(cronfence.Config{Store: st, Logger: silent, DisableTimers: true,
		Exclude: []string{"* * 25 12 *"}}) // no job runs on Christmas Day
	if err != nil {
		log.Fatal(err)
	}
	err = sched.Register(cronfence.Job{
		Name:     "weekday-close",
		Schedule: "0 18 * * *",
		TimeZone: "Europe/Lisbon",
		Exclude:  []string{"* * * * SAT,SUN"}, // nor at weekends
		Handler:  func(ctx context.Context, run *cronfence.Run) error { return nil },
	})
	if err != nil {
		log.Fatal(err)
	}
	info := sched.Jobs()[0]
	day := info.Next.In(time.FixedZone("", 0)).Weekday()
	fmt.Println("exclusions:", info.Exclusions)
	fmt.Println("next is a weekday:", day != time.Saturday && day != time.Sunday)
	// Output:
	// exclusions: [* * * * SAT,SUN * * 25 12 *]
	// next is a weekday: true
}
