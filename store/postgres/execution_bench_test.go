package postgres

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/store"
)

// BenchmarkStatementExecution is what the server spends on the two
// statements of every scheduled run, by itself: each op claims a batch of
// 1,000 fresh slots (a timer's claim, sql/slotClaim.sql) and ends their
// runs in two finish batches of 500 (the group commit,
// sql/slotFinishBatch.sql), each under EXPLAIN (ANALYZE, TIMING OFF, WAL),
// and reports per item the server's execution and planning time and the
// WAL written: no client, no round trip, no other load. Beside
// BenchmarkReplicas's CPU a run it says how much of a run's database time
// is the statements' own work. The history grows by 1,000 runs an op, so
// the figures are of a store of that many runs (ten warm-up ops first).
// The database's collation counts (text comparisons in sorts and
// indexes): the replica benchmark's cluster uses C; set
// TEST_DATABASE_URL to a database created with LC_COLLATE 'C' to compare.
//
//	go test -run '^$' -bench StatementExecution -benchtime 30x ./store/postgres/
func BenchmarkStatementExecution(b *testing.B) {
	ctx := context.Background()
	base, schema := pgtest.Schema(b)
	cfg := base.Config()
	TunePool(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	s, err := New(pool, &Config{Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	const jobs, finishBatch = 1000, 500
	first := time.Now().Add(-time.Hour).Truncate(time.Second)
	var claim, finish explained
	round := 0
	one := func(measure bool) {
		slot := first.Add(time.Duration(round) * time.Second)
		round++
		items := make([]store.SlotClaimParams, jobs)
		for j := range items {
			job := fmt.Sprintf("job-%04d", j)
			items[j] = store.SlotClaimParams{Job: job, Slot: slot, LeaseName: "job:" + job, Owner: "replica-0", TTL: time.Minute, MaxAttempts: 1}
		}
		c := explain(b, s, s.q.slotClaim, jobs, s.claimArgs(items))
		rows, err := pool.Query(ctx, fmt.Sprintf(`SELECT job, lease_name, generation FROM %s.slots WHERE slot = $1 AND status = 'running' ORDER BY lease_name`,
			pgx.Identifier{schema}.Sanitize()), slot)
		if err != nil {
			b.Fatal(err)
		}
		var ends []store.SlotFinishParams
		for rows.Next() {
			p := store.SlotFinishParams{Slot: slot, Owner: "replica-0", Status: store.SlotCompleted, Run: store.Run{Attempt: 1, Success: true}}
			if err := rows.Scan(&p.Job, &p.LeaseName, &p.Generation); err != nil {
				b.Fatal(err)
			}
			ends = append(ends, p)
		}
		if err := rows.Err(); err != nil {
			b.Fatal(err)
		}
		if len(ends) != jobs {
			b.Fatalf("round %d: %d of %d slots claimed", round, len(ends), jobs)
		}
		var f explained
		for k := 0; k < jobs; k += finishBatch {
			batch := ends[k : k+finishBatch]
			order := make([]int, len(batch))
			for i := range order {
				order[i] = i
			}
			args, err := s.finishBatchArgs(batch, order)
			if err != nil {
				b.Fatal(err)
			}
			f.add(explain(b, s, s.q.slotFinishBatch, len(batch), args))
		}
		if measure {
			claim.add(c)
			finish.add(f)
		}
	}
	for range 10 {
		one(false)
	}
	for b.Loop() {
		one(true)
	}
	n := float64(b.N * jobs)
	b.ReportMetric(claim.exec/n, "claim-exec-µs/item")
	b.ReportMetric(claim.plan/n, "claim-plan-µs/item")
	b.ReportMetric(claim.wal/n, "claim-WAL-B/item")
	b.ReportMetric(finish.exec/n, "finish-exec-µs/item")
	b.ReportMetric(finish.plan/n, "finish-plan-µs/item")
	b.ReportMetric(finish.wal/n, "finish-WAL-B/item")
}

// explained is what EXPLAIN ANALYZE told of statements: execution and
// planning time in µs, and WAL bytes.
type explained struct{ exec, plan, wal float64 }

func (e *explained) add(o explained) {
	e.exec, e.plan, e.wal = e.exec+o.exec, e.plan+o.plan, e.wal+o.wal
}

var (
	explainExec = regexp.MustCompile(`^Execution Time: ([0-9.]+) ms`)
	explainPlan = regexp.MustCompile(`^Planning Time: ([0-9.]+) ms`)
	explainWAL  = regexp.MustCompile(`^ *WAL: .*bytes=([0-9]+)`)
)

// explain runs sql (a batch statement of n items) under EXPLAIN ANALYZE,
// sent as the store sends it, and reads the plan's top WAL line and its
// times.
func explain(b *testing.B, s *Store, sql string, n int, args []any) explained {
	rows, err := s.querySized(context.Background(), "EXPLAIN (ANALYZE, TIMING OFF, WAL) "+sql, n, args)
	if err != nil {
		b.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		b.Fatal(err)
	}
	var e explained
	walSeen := false
	for _, line := range lines {
		if m := explainExec.FindStringSubmatch(line); m != nil {
			e.exec = msToMicros(b, m[1])
		} else if m := explainPlan.FindStringSubmatch(line); m != nil {
			e.plan = msToMicros(b, m[1])
		} else if m := explainWAL.FindStringSubmatch(line); m != nil && !walSeen {
			walSeen = true // the first is the top node's: the statement's
			if e.wal, err = strconv.ParseFloat(m[1], 64); err != nil {
				b.Fatal(err)
			}
		}
	}
	if e.exec == 0 {
		b.Fatalf("no execution time in the plan:\n%v", lines)
	}
	return e
}

func msToMicros(b *testing.B, ms string) float64 {
	v, err := strconv.ParseFloat(ms, 64)
	if err != nil {
		b.Fatal(err)
	}
	return v * 1000
}
