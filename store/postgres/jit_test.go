package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
)

// On a pool left as the server sets it up (jit on, as an application's own
// pool is), none of the store's statements is compiled to machine code,
// however many jobs a replica registers or claims at once: a statement
// that passes jit_above_cost was compiled for longer than it ran (a claim
// of 1,000 items for seconds, a registration of 10,000 jobs for 60 to
// 130 ms more than its 110 ms). Counted at the server by
// pg_stat_statements, on a throwaway cluster.
func TestNoStatementIsCompiledOnAnUntunedPool(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a throwaway cluster")
	}
	t.Parallel()
	c := pgtest.NewCluster(t, "shared_preload_libraries=pg_stat_statements", "pg_stat_statements.track=all")
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, c.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var jit bool
	if err := pool.QueryRow(ctx, `SELECT pg_jit_available() AND current_setting('jit')::bool`).Scan(&jit); err != nil {
		t.Fatal(err)
	}
	if !jit {
		t.Skip("this server does not compile statements (jit off or unavailable): nothing to check")
	}
	s, err := postgres.New(pool, &postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE EXTENSION pg_stat_statements; SELECT pg_stat_statements_reset()`); err != nil {
		t.Fatal(err)
	}
	var jobs []string
	for i := range 10_000 {
		jobs = append(jobs, fmt.Sprintf("job-%05d", i))
	}
	if _, err := s.JobRegister(ctx, store.JobRegisterParams{Jobs: jobs}); err != nil {
		t.Fatal(err)
	}
	now, err := s.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	claims := make([]store.SlotClaimParams, 1000)
	for i := range claims {
		claims[i] = store.SlotClaimParams{Job: jobs[i], Slot: now.Add(-time.Second), LeaseName: "job:" + jobs[i], Owner: "a", TTL: time.Minute, MaxAttempts: 1}
	}
	claimed, err := s.SlotClaimBatch(ctx, claims)
	if err != nil {
		t.Fatal(err)
	}
	finishes := make([]store.SlotFinishParams, len(claimed))
	for i, r := range claimed {
		if !r.Claimed {
			t.Fatalf("claim %d: %+v", i, r)
		}
		finishes[i] = store.SlotFinishParams{Job: r.Slot.Job, Slot: r.Slot.Slot, LeaseName: r.Lease.Name, Owner: "a", Generation: r.Lease.Generation,
			Status: store.SlotCompleted, Run: store.Run{Attempt: 1, Success: true}}
	}
	if _, err := s.SlotFinishBatch(ctx, finishes); err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, `SELECT left(regexp_replace(query, '\s+', ' ', 'g'), 80), jit_functions FROM pg_stat_statements WHERE jit_functions > 0`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var query string
		var functions int64
		if err := rows.Scan(&query, &functions); err != nil {
			t.Fatal(err)
		}
		t.Errorf("compiled (%d functions): %s", functions, query)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}
