// Command quickstart shows cronfence as a library on the embedded SQLite
// default: three replicas (three Schedulers, each with its own connections
// to one database file) register the same every-two-seconds job. Each slot
// runs once, on whichever replica claims it; the handler writes a ledger row
// and completes its slot in the same transaction (Run.Complete). At the end
// it counts what ran.
//
//	go run ./examples/quickstart [-db FILE] [-duration 10s]
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/store/sqlite"
)

const (
	job      = "ledger-close"
	schedule = "*/2 * * * * *" // every two seconds (a seconds field first)
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

	first, err := open(ctx, *dbPath)
	if err != nil {
		log.Fatal(err)
	}
	defer first.Close()
	if _, err := first.DB().ExecContext(ctx, `CREATE TABLE IF NOT EXISTS quickstart_ledger (
		slot INTEGER PRIMARY KEY, replica TEXT NOT NULL, generation INTEGER NOT NULL)`); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("cronfence quickstart: %d replicas, job %q on %q, database %s\n", replicas, job, schedule, *dbPath)

	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var scheds []*cronfence.Scheduler
	for i := 1; i <= replicas; i++ {
		st, err := open(ctx, *dbPath)
		if err != nil {
			log.Fatal(err)
		}
		defer st.Close()
		name := fmt.Sprintf("replica-%d", i)
		s, err := cronfence.New(cronfence.Config{Store: st, Owner: name, Logger: quiet})
		if err != nil {
			log.Fatal(err)
		}
		if err := s.Register(cronfence.Job{Name: job, Schedule: schedule, CompletesInTx: true, Handler: handler(st, name)}); err != nil {
			log.Fatal(err)
		}
		if err := s.Start(ctx); err != nil {
			log.Fatal(err)
		}
		scheds = append(scheds, s)
	}

	select {
	case <-ctx.Done():
	case <-time.After(*duration):
	}
	for _, s := range scheds {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := s.Stop(stopCtx); err != nil {
			log.Printf("stop: %v", err)
		}
		cancel()
	}

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

// handler writes the run's ledger row and completes its slot in the same
// transaction: both commit, or neither does, so no replica runs the slot
// again once the row is there.
func handler(st *sqlite.Store, name string) cronfence.Handler {
	return func(ctx context.Context, run *cronfence.Run) error {
		tx, err := st.DB().BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		if _, err := tx.ExecContext(ctx, `INSERT INTO quickstart_ledger (slot, replica, generation) VALUES (?, ?, ?)`,
			run.Slot.UnixMicro(), name, run.Generation); err != nil {
			return err
		}
		if err := run.Complete(ctx, tx); err != nil {
			return err // fenced out: another replica holds the slot now
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		fmt.Printf("%s  %-9s ran at generation %d\n", run.Slot.Format("15:04:05"), name, run.Generation)
		return nil
	}
}
