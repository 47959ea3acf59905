package riverbridge_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/riverbridge"
	"github.com/cronfence/cronfence/store/postgres"
)

// ReportArgs is a River job enqueued once per slot.
type ReportArgs struct {
	riverbridge.Slot
	Region string `json:"region"`
}

func (ReportArgs) Kind() string { return "daily_report" }

// dailyReport is README.md's "River bridge" snippet, line for line
// (TestREADMERiverBridgeIsTheExample; TestDailyReportEnqueues runs it): a
// cronfence job whose every slot enqueues one ReportArgs job in River.
func dailyReport(pool *pgxpool.Pool, client *river.Client[pgx.Tx]) (cronfence.Job, error) {
	return riverbridge.Job(cronfence.Job{Name: "daily-report", Schedule: "5 0 * * *"},
		riverbridge.Config[ReportArgs]{
			Pool: pool, Client: client,
			ArgsFunc: func(_ context.Context, _ *cronfence.Run, slot riverbridge.Slot) (ReportArgs, error) {
				return ReportArgs{Slot: slot, Region: "eu"}, nil
			},
			InsertOptsFunc: func(*cronfence.Run) *river.InsertOpts {
				return &river.InsertOpts{Queue: "reports", Priority: 2}
			},
		})
}

// A cronfence job that enqueues one River job per slot, every day at 00:05,
// on a database holding both River's tables (migrated with rivermigrate)
// and cronfence's store. Every replica registers the same job; River's
// workers, wherever they run, work the jobs.
func ExampleJob() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	st, err := postgres.New(pool, nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	// An insert-only River client: the workers may run elsewhere.
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	if err != nil {
		log.Fatal(err)
	}

	job, err := dailyReport(pool, client)
	if err != nil {
		log.Fatal(err)
	}
	s, err := cronfence.New(cronfence.Config{Store: st})
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Register(job); err != nil {
		log.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer s.Stop(ctx)
	fmt.Println("enqueuing daily-report slots into River")
}
