package riverbridge_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/internal/readmesnippet"
	"github.com/cronfence/cronfence/riverbridge"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// The README's "River bridge" code is the body of dailyReport
// (example_test.go), line for line: a snippet that drifts from the code
// the tests run fails here.
func TestREADMERiverBridgeIsTheExample(t *testing.T) {
	t.Parallel()
	readmesnippet.Check(t, "../README.md", "### River bridge", "example_test.go",
		"func dailyReport(pool *pgxpool.Pool, client *river.Client[pgx.Tx]) (cronfence.Job, error) {")
}

// The README's job, run once by hand on a real database: it enqueues one
// daily_report job in River's queue "reports", at priority 2, with the
// run's slot key in its args.
func TestDailyReportEnqueues(t *testing.T) {
	pool, st, _, riverSchema := riverbridge.OpenTestDatabase(t)
	ctx := context.Background()
	// Insert-only, as a service's may be: its workers run elsewhere.
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Schema: riverSchema})
	if err != nil {
		t.Fatal(err)
	}
	job, err := dailyReport(pool, client)
	if err != nil {
		t.Fatal(err)
	}
	s, err := cronfence.New(cronfence.Config{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register(job); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	run, err := s.Trigger(ctx, "daily-report")
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.Stop(sctx); err != nil { // waits for the run's end
		t.Fatal(err)
	}
	var n int
	var queue string
	var priority int
	var key string
	err = pool.QueryRow(ctx, `SELECT count(*) OVER (), queue, priority, args->>'cronfence_key' FROM `+
		pgx.Identifier{riverSchema, "river_job"}.Sanitize()+` WHERE kind = 'daily_report'`).Scan(&n, &queue, &priority, &key)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || queue != "reports" || priority != 2 || !strings.HasPrefix(key, "daily-report/manual-") || run.Generation == 0 {
		t.Fatalf("River jobs: %d in queue %q at priority %d, key %q (run %+v); want one in reports at 2 keyed by the manual run", n, queue, priority, key, run)
	}
}
