// Command quickstart shows cronfence's core on the embedded SQLite default:
// three replicas, each with its own connections to one database file, fire
// the same every-two-seconds job. Each slot is claimed once; the winner's
// handler writes a row fenced by its lease generation; the others see the
// claim and skip. At the end it counts what ran.
//
//	go run ./examples/quickstart [-db FILE] [-duration 10s]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/sqlite"
)

const (
	job      = "ledger-close"
	interval = 2 * time.Second
	replicas = 3
)

func main() {
	dbPath := flag.String("db", "cronfence-quickstart.db", "SQLite database file (created if missing)")
	duration := flag.Duration("duration", 10*time.Second, "how long to run")
	flag.Parse()
	if *duration <= 0 {
		log.Fatalf("quickstart: -duration must be positive, got %s", *duration)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()

	first, err := open(ctx, *dbPath)
	if err != nil {
		log.Fatal(err)
	}
	defer first.Close()
	if _, err := first.DB().ExecContext(ctx, `CREATE TABLE IF NOT EXISTS quickstart_ledger (
		slot INTEGER PRIMARY KEY, replica TEXT NOT NULL, generation INTEGER NOT NULL)`); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("cronfence quickstart: %d replicas, job %q every %s, database %s\n", replicas, job, interval, *dbPath)

	var wg sync.WaitGroup
	for i := 1; i <= replicas; i++ {
		s, err := open(ctx, *dbPath)
		if err != nil {
			log.Fatal(err)
		}
		defer s.Close()
		wg.Go(func() { replica(ctx, s, fmt.Sprintf("replica-%d", i)) })
	}
	wg.Wait()

	var slots, rows int
	err = first.DB().QueryRowContext(context.Background(),
		`SELECT count(DISTINCT slot), count(*) FROM quickstart_ledger`).Scan(&slots, &rows)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("ledger: %d slots written by %d rows in total (a duplicate would make them differ)\n", slots, rows)
}

func open(ctx context.Context, path string) (*sqlite.Store, error) {
	s, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		return nil, err
	}
	if err := s.Migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// replica fires at every slot of the job, anchored to the Unix epoch so all
// replicas compute the same instants, and tries to claim it.
func replica(ctx context.Context, s *sqlite.Store, name string) {
	for {
		next := time.Now().Truncate(interval).Add(interval)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(next)):
		}
		res, err := s.SlotClaim(ctx, store.SlotClaimParams{
			Job: job, Slot: next, LeaseName: "job:" + job, Owner: name, TTL: time.Minute, MaxAttempts: 3,
		})
		switch {
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			return
		case err != nil:
			log.Printf("%s: claim: %v", name, err)
			continue
		case !res.Claimed:
			fmt.Printf("%s  %-9s skipped (%s)\n", next.Format("15:04:05"), name, res.Refusal)
			continue
		}
		runErr := write(ctx, s, res, name)
		status := store.SlotCompleted
		if runErr != nil {
			status = store.SlotFailed
		}
		_, err = s.SlotFinish(context.WithoutCancel(ctx), store.SlotFinishParams{
			Job: job, Slot: next, LeaseName: res.Lease.Name, Owner: name, Generation: res.Lease.Generation,
			Status: status, Run: store.Run{Attempt: res.Slot.Attempts, Success: runErr == nil, Error: errString(runErr)},
		})
		if err != nil {
			log.Printf("%s: finish: %v", name, err)
		}
		fmt.Printf("%s  %-9s ran at generation %d\n", next.Format("15:04:05"), name, res.Lease.Generation)
	}
}

// write is the handler: one fenced insert into the ledger.
func write(ctx context.Context, s *sqlite.Store, res store.SlotClaimResult, name string) error {
	tx, err := s.DB().BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := s.LeaseFence(ctx, tx, res.Lease.Name, res.Lease.Generation); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO quickstart_ledger (slot, replica, generation) VALUES (?, ?, ?)`,
		res.Slot.Slot.UnixMicro(), name, res.Lease.Generation); err != nil {
		return err
	}
	return tx.Commit()
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
