package postgres_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
)

// A batch of hundreds of items (a busy replica's claim, its group commit
// of runs' ends) is planned for its size, and that plan must still reach
// each slot, lease and run by its key: the history tables grow with every
// run, and a plan that reads and hashes the whole slots table (as the
// claim's did, 60 ms at 65,000 slots for 1,000 items, and growing) costs
// more with every run the store keeps (and the leases table, one row per
// job, with every job registered). The claim's lookups are written so
// that no plan can do otherwise, on any pool; the finish counts on the
// tuned pool's settings (TunePool), as the cronfence binary runs it.
func TestLargeBatchesReachRowsByKey(t *testing.T) {
	t.Parallel()
	s, base, schema := tunedStore(t)
	// A history: 500 jobs, 60 slots each, every one completed with its
	// run row, and the leases of ten times as many jobs (the batch is a
	// tenth of the jobs due over a minute, say).
	const jobs, history, leaseRows = 500, 60, 5000
	sl, runs, leases := pgx.Identifier{schema, "slots"}.Sanitize(), pgx.Identifier{schema, "runs"}.Sanitize(), pgx.Identifier{schema, "leases"}.Sanitize()
	for _, st := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO ` + leases + ` (name, owner, generation, acquired_at, renewed_at, expires_at)
		  SELECT 'job:job-' || j, 'a', $2, now(), now(), now() FROM generate_series(1, $1::int) j`, []any{leaseRows, history}},
		{`INSERT INTO ` + sl + ` (job, slot, status, owner, lease_name, generation, attempts, started_at, finished_at)
		  SELECT 'job-' || j, now() - k * interval '1 minute', 'completed', 'a', 'job:job-' || j, k, 1, now(), now()
		    FROM generate_series(1, $1::int) j, generate_series(1, $2::int) k`, []any{jobs, history}},
		{`INSERT INTO ` + runs + ` (job, slot, manual, catch_up, owner, generation, lease_name, attempt, started_at, finished_at, success, skipped, reason, error, logs)
		  SELECT 'job-' || j, now() - k * interval '1 minute', false, false, 'a', k, 'job:job-' || j, 1, now(), now(), true, false, '', '', '{}'
		    FROM generate_series(1, $1::int) j, generate_series(1, $2::int) k`, []any{jobs, history}},
		{`ANALYZE ` + leases + `, ` + sl + `, ` + runs, nil},
	} {
		if _, err := base.Exec(ctx(t), st.sql, st.args...); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	var claims []store.SlotClaimParams
	var finishes []store.SlotFinishParams
	for j := 1; j <= jobs; j++ {
		job := fmt.Sprintf("job-%d", j)
		claims = append(claims, store.SlotClaimParams{Job: job, Slot: now, LeaseName: "job:" + job, Owner: "a", TTL: time.Minute, MaxAttempts: 1})
		finishes = append(finishes, store.SlotFinishParams{Job: job, Slot: now, LeaseName: "job:" + job, Owner: "a",
			Generation: history + 1, Status: store.SlotCompleted, Run: store.Run{Attempt: 1, Success: true, Logs: []string{"done"}}})
	}
	// The claim on the application's own pool, untuned: its plan may not
	// depend on the settings.
	untuned, err := postgres.New(base, &postgres.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	claimPlan, err := untuned.ClaimBatchPlan(ctx(t), claims)
	if err != nil {
		t.Fatal(err)
	}
	finishPlan, err := s.FinishBatchPlan(ctx(t), finishes)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ what, plan string }{{"claim", claimPlan}, {"finish", finishPlan}} {
		tables := []string{"slots", "runs"}
		if c.what == "claim" {
			// leases has a row per job: it grows with the jobs, not the
			// history. The claim reaches only its own jobs' rows; the
			// finish's plan still hashes the whole table when the batch
			// is a tenth of it (a few ms at 10,000 jobs), and is not held
			// to it yet.
			tables = append(tables, "leases")
		}
		for _, table := range tables {
			if strings.Contains(c.plan, "Seq Scan on "+table) {
				t.Errorf("the %s of %d items reads the whole %s table:\n%s", c.what, jobs, table, c.plan)
			}
		}
	}
}

// The scan for interrupted runs reads the partial index of running slots
// entry by entry, not through a bitmap: under load that index holds an
// entry for every run since the last vacuum, each pointing at the row
// version its end replaced, and a bitmap scan reads all their heap pages on
// every scan, where an index scan skips the ones an earlier scan found
// dead (slot.go, interruptedScanSQL). The history here is what a busy
// minute leaves: 50,000 slots claimed (running) and then ended, vacuum not
// yet come, and a thousand running now; the rows lie in job order, not
// slot order, as many jobs' slots of one instant are written together.
func TestTheInterruptedRunScanSkipsDeadEntries(t *testing.T) {
	t.Parallel()
	s, base, schema := tunedStore(t)
	sl := pgx.Identifier{schema, "slots"}.Sanitize()
	for _, q := range []string{
		`ALTER TABLE ` + sl + ` SET (autovacuum_enabled = false)`,
		`INSERT INTO ` + sl + ` (job, slot, status, owner, lease_name, generation, attempts, started_at)
		  SELECT 'job-' || j, now() - k * interval '1 second', 'running', 'a', 'job:job-' || j, k, 1, now()
		    FROM generate_series(1, 1000) j, generate_series(1, 50) k ORDER BY j`,
		// ANALYZE while 5,000 run (as autovacuum's came under load), then
		// all but the last thousand end.
		`UPDATE ` + sl + ` SET status = 'completed', finished_at = now() WHERE slot < now() - interval '5 seconds'`,
		`ANALYZE ` + sl,
		`UPDATE ` + sl + ` SET status = 'completed', finished_at = now() WHERE status = 'running' AND slot < now() - interval '1 second'`,
	} {
		if _, err := base.Exec(ctx(t), q); err != nil {
			t.Fatal(err)
		}
	}
	plan, err := s.InterruptedScanPlan(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plan, "Bitmap Heap Scan on slots") || !strings.Contains(plan, "Index Scan using slots_running_idx") {
		t.Errorf("the scan for interrupted runs does not read slots_running_idx entry by entry:\n%s", plan)
	}
}
