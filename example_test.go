package cronfence_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/store"
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
