package postgres

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/internal/prunesteps"
)

// RunInsert writes one run row, typically a skip; for a holding that has a
// row already it returns that row. See store.Store.
func (s *Store) RunInsert(ctx context.Context, run store.Run) (store.Run, error) {
	if err := run.Validate(); err != nil {
		return store.Run{}, err
	}
	if err := s.usable(); err != nil {
		return store.Run{}, err
	}
	run = run.Bounded()
	var sr scannedRun
	err := s.pool.QueryRow(ctx, s.q.runInsert,
		run.Job, nullTime(slotTime(run.Slot)), run.Manual, run.CatchUp, run.Owner, run.Generation, run.Attempt,
		nullTime(run.StartedAt), nullTime(run.FinishedAt), run.Success, run.Skipped, run.Reason, run.Error,
		logsArg(run.Logs), s.nowArg(time.Time{}), run.LeaseName).Scan(sr.dest()...)
	if err != nil {
		return store.Run{}, s.translate(fmt.Sprintf("insert run of job %q", run.Job), err)
	}
	return sr.run(), nil
}

// RunInterrupted records dead holdings' attempts as interrupted run rows,
// in one statement (sql/runInterrupted.sql). See store.Store.
func (s *Store) RunInterrupted(ctx context.Context, items []store.RunInterruptedParams) ([]store.Run, error) {
	if err := store.ValidateInterruptedBatch(items); err != nil {
		return nil, err
	}
	if err := s.usable(); err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, nil
	}
	n := len(items)
	var (
		jobs, leaseNames, owners   = make([]string, n), make([]string, n), make([]string, n)
		expired, gone, taken, logs = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		slots                      = make([]time.Time, n)
		generations                = make([]int64, n)
	)
	for i, p := range items {
		jobs[i], slots[i], leaseNames[i], owners[i], generations[i] = p.Job, slotTime(p.Slot), p.LeaseName, p.Owner, p.Generation
		// The row as each way of finding the run dead would have it; the
		// statement picks one.
		row := p.Run(0, time.Time{}, store.DeadLeaseExpired, time.Time{})
		expired[i] = row.Error
		gone[i] = p.Run(0, time.Time{}, store.DeadOwnerGone, time.Time{}).Error
		taken[i] = p.Run(0, time.Time{}, store.DeadLeaseTaken, time.Time{}).Error
		if len(row.Logs) > 0 {
			logs[i] = row.Logs[0]
		}
	}
	what := fmt.Sprintf("record %d interrupted run(s), first of job %q", n, items[0].Job)
	rows, err := s.pool.Query(ctx, s.q.runInterrupted,
		jobs, slots, leaseNames, owners, generations, expired, gone, taken, logs, store.ReasonInterrupted, s.nowArg(items[0].Now))
	if err != nil {
		return nil, s.translate(what, err)
	}
	runs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Run, error) {
		var sr scannedRun
		err := row.Scan(sr.dest()...)
		return sr.run(), err
	})
	if err != nil {
		return nil, s.translate(what, err)
	}
	return runs, nil
}

// RunGet returns the run row of a holding. See store.Store.
func (s *Store) RunGet(ctx context.Context, leaseName string, generation int64) (store.Run, error) {
	if err := store.ValidateHolding(leaseName, generation); err != nil {
		return store.Run{}, err
	}
	if err := s.usable(); err != nil {
		return store.Run{}, err
	}
	var sr scannedRun
	if err := s.pool.QueryRow(ctx, s.q.runGet, leaseName, generation).Scan(sr.dest()...); err != nil {
		return store.Run{}, s.translate(fmt.Sprintf("get the run of lease %q at generation %d", leaseName, generation), err)
	}
	return sr.run(), nil
}

// RunList returns run rows, newest first. See store.Store.
func (s *Store) RunList(ctx context.Context, p store.RunListParams) ([]store.Run, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.usable(); err != nil {
		return nil, err
	}
	// The newest first: before every start, 'infinity'.
	before := pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}
	beforeID := int64(math.MaxInt64)
	if !p.Before.IsZero() {
		before, beforeID = pgtype.Timestamptz{Time: p.Before.StartedAt, Valid: true}, p.Before.ID
	}
	var rows pgx.Rows
	var err error
	if p.Job == "" {
		rows, err = s.pool.Query(ctx, s.q.runList, before, beforeID, p.EffectiveLimit())
	} else {
		rows, err = s.pool.Query(ctx, s.q.runListJob, p.Job, before, beforeID, p.EffectiveLimit())
	}
	if err != nil {
		return nil, s.translate("list runs", err)
	}
	defer rows.Close()
	var runs []store.Run
	for rows.Next() {
		var sr scannedRun
		if err := rows.Scan(sr.dest()...); err != nil {
			return nil, s.translate("list runs", err)
		}
		runs = append(runs, sr.run())
	}
	if err := rows.Err(); err != nil {
		return nil, s.translate("list runs", err)
	}
	return runs, nil
}

// RunListPerJob returns each job's newest runs in one statement. See
// store.Store.
func (s *Store) RunListPerJob(ctx context.Context, p store.RunListPerJobParams) ([][]store.Run, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.usable(); err != nil {
		return nil, err
	}
	out := make([][]store.Run, len(p.Jobs))
	if len(p.Jobs) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, s.q.runListPerJob, p.Jobs, p.Limit)
	if err != nil {
		return nil, s.translate("list runs per job", err)
	}
	defer rows.Close()
	for rows.Next() {
		var ord int64
		var sr scannedRun
		if err := rows.Scan(append([]any{&ord}, sr.dest()...)...); err != nil {
			return nil, s.translate("list runs per job", err)
		}
		out[ord-1] = append(out[ord-1], sr.run())
	}
	if err := rows.Err(); err != nil {
		return nil, s.translate("list runs per job", err)
	}
	return out, nil
}

// Prune deletes old slots and runs in steps (pruneStep.sql), keeping each
// job's latest of each.
func (s *Store) Prune(ctx context.Context, p store.PruneParams) (store.PruneResult, error) {
	if err := p.Validate(); err != nil {
		return store.PruneResult{}, err
	}
	if err := s.usable(); err != nil {
		return store.PruneResult{}, err
	}
	// Where the next step starts in each table: at first "" and the zero
	// time, before every job name and every run; nil once the table is
	// done with (pruneStep.sql reads NULL as nothing left to do).
	slotsFrom, runsFrom := new(string), new(time.Time)
	return prunesteps.Run(ctx, p, func(ctx context.Context, batch int) (store.PruneResult, bool, error) {
		var (
			res     store.PruneResult
			lastJob *string
			lastRun *time.Time
		)
		if err := s.pool.QueryRow(ctx, s.q.pruneStep, p.Before, batch, slotsFrom, runsFrom).
			Scan(&res.Slots, &lastJob, &res.Runs, &lastRun); err != nil {
			return store.PruneResult{}, false, s.translate("prune", err)
		}
		if res.Slots < int64(batch) {
			slotsFrom = nil
		} else {
			slotsFrom = lastJob
		}
		if res.Runs < int64(batch) {
			runsFrom = nil
		} else {
			runsFrom = lastRun
		}
		return res, slotsFrom == nil && runsFrom == nil, nil
	})
}

// scannedRun receives the runColumns of one row.
type scannedRun struct {
	r    store.Run
	slot *time.Time
}

func (sr *scannedRun) dest() []any {
	r := &sr.r
	return []any{&r.ID, &r.Job, &sr.slot, &r.Manual, &r.CatchUp, &r.Owner, &r.Generation, &r.LeaseName, &r.Attempt,
		&r.StartedAt, &r.FinishedAt, &r.Success, &r.Skipped, &r.Reason, &r.Error, &r.Logs}
}

func (sr *scannedRun) run() store.Run {
	r := sr.r
	if sr.slot != nil {
		r.Slot = sr.slot.UTC()
	}
	r.StartedAt, r.FinishedAt = r.StartedAt.UTC(), r.FinishedAt.UTC()
	if len(r.Logs) == 0 {
		r.Logs = nil
	}
	return r
}

// nullTime maps the zero time to SQL NULL.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// logsArg never sends NULL for the NOT NULL logs column.
func logsArg(logs []string) []string {
	if logs == nil {
		return []string{}
	}
	return logs
}
