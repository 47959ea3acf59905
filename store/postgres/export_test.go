package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cronfence/cronfence/store"
)

// LiveKeyHeld reports whether s holds the liveness lock key now, as the
// claims it records keys with see it (liveKeyArg): for tests that must know
// a break has been noticed before they claim.
func (s *Store) LiveKeyHeld(key int64) bool { return s.liveKeyArg(key) == key }

// LeaseAcquireSQL is the acquisition statement, for tests that run it
// inside a transaction of their own to see what it locks.
func (s *Store) LeaseAcquireSQL() string { return s.q.leaseAcquire }

// NoticeChannel is the schema's notice channel, for tests that find the
// listener's session.
func NoticeChannel(schema string) string { return noticeChannel(schema) }

// RunListJobSQL is the statement that lists one job's runs, for tests of
// its plan.
func (s *Store) RunListJobSQL() string { return s.q.runListJob }

// ClaimBatchPlan is the server's plan for the claim of items, sent as
// SlotClaimBatch sends it, for tests of that plan. Nothing is claimed.
func (s *Store) ClaimBatchPlan(ctx context.Context, items []store.SlotClaimParams) (string, error) {
	return s.explain(ctx, s.q.slotClaim, len(items), s.claimArgs(items))
}

// FinishBatchPlan is the server's plan for the finish of items, sent as
// SlotFinishBatch sends it, for tests of that plan. Nothing is finished.
func (s *Store) FinishBatchPlan(ctx context.Context, items []store.SlotFinishParams) (string, error) {
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	args, err := s.finishBatchArgs(items, order)
	if err != nil {
		return "", err
	}
	return s.explain(ctx, s.q.slotFinishBatch, len(items), args)
}

func (s *Store) explain(ctx context.Context, sql string, n int, args []any) (string, error) {
	rows, err := s.querySized(ctx, "EXPLAIN "+sql, n, args)
	if err != nil {
		return "", err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return strings.Join(lines, "\n"), err
}

// InterruptedScanPlan is the server's plan for SlotListInterrupted's
// statement, sent as it sends it.
func (s *Store) InterruptedScanPlan(ctx context.Context) (string, error) {
	rows, err := s.queryBehind(ctx, []string{interruptedScanSQL}, "EXPLAIN "+s.q.slotListInterrupted, []any{s.nowArg(time.Time{})})
	if err != nil {
		return "", err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return strings.Join(lines, "\n"), err
}

// WarmedSQL is the statements WarmPool readies on each connection.
func (s *Store) WarmedSQL() []string {
	return []string{s.q.slotClaim, s.q.slotClaimJSON, s.q.slotFinishBatch, s.q.slotFinish, s.q.leaseRenewBatch}
}
