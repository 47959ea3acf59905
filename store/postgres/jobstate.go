package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cronfence/cronfence/store"
)

// JobStateSet sets or clears a job's enabled override. See store.Store.
func (s *Store) JobStateSet(ctx context.Context, p store.JobStateSetParams) (store.JobState, error) {
	if err := p.Validate(); err != nil {
		return store.JobState{}, err
	}
	if err := s.usable(); err != nil {
		return store.JobState{}, err
	}
	var until any
	if !p.Until.IsZero() {
		until = p.Until
	}
	js, err := scanJobState(s.pool.QueryRow(ctx, s.q.jobStateSet, p.Job, p.Enabled, p.By, p.Note, s.nowArg(time.Time{}), until))
	if err != nil {
		return store.JobState{}, s.translate(fmt.Sprintf("set the state of job %q", p.Job), err)
	}
	return js, nil
}

// JobStateList returns every job's state, by name. See store.Store.
func (s *Store) JobStateList(ctx context.Context) ([]store.JobState, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, s.q.jobStateList)
	if err != nil {
		return nil, s.translate("list job states", err)
	}
	states, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.JobState, error) { return scanJobState(row) })
	if err != nil {
		return nil, s.translate("list job states", err)
	}
	return states, nil
}

func scanJobState(row pgx.Row) (store.JobState, error) {
	var js store.JobState
	var until *time.Time
	err := row.Scan(&js.Job, &js.EnabledOverride, &js.OverrideBy, &js.OverrideAt, &js.Note, &until)
	js.OverrideAt = js.OverrideAt.UTC()
	if until != nil {
		js.Until = until.UTC()
	}
	return js, err
}

// JobRegister records the jobs' first registration. See store.Store and
// jobRegisterSQL.
func (s *Store) JobRegister(ctx context.Context, p store.JobRegisterParams) ([]store.JobRegistration, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.usable(); err != nil {
		return nil, err
	}
	if len(p.Jobs) == 0 {
		return nil, nil
	}
	// A job another replica registers at the same moment is inserted after
	// this statement's snapshot and read by neither of its branches: the
	// second statement sees it.
	for try := 0; ; try++ {
		regs, missing, err := s.jobRegister(ctx, p)
		if err != nil || !missing {
			return regs, err
		}
		if try == 1 {
			return nil, fmt.Errorf("postgres: register %d job(s): a job's first registration could not be read back", len(p.Jobs))
		}
	}
}

func (s *Store) jobRegister(ctx context.Context, p store.JobRegisterParams) (regs []store.JobRegistration, missing bool, err error) {
	// Planned for its size and not compiled (see largeBatchSQL): a
	// registration of 10,000 jobs was compiled for longer than it ran.
	rows, err := s.querySized(ctx, s.q.jobRegister, len(p.Jobs), []any{p.Jobs, s.nowArg(p.Now)})
	if err != nil {
		return nil, false, s.translate(fmt.Sprintf("register %d job(s)", len(p.Jobs)), err)
	}
	defer rows.Close()
	regs = make([]store.JobRegistration, 0, len(p.Jobs))
	for rows.Next() {
		var r store.JobRegistration
		var first *time.Time
		if err := rows.Scan(&r.Job, &first); err != nil {
			return nil, false, s.translate("register jobs", err)
		}
		if first == nil {
			missing = true
		} else {
			r.FirstSeen = first.UTC()
		}
		regs = append(regs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, false, s.translate(fmt.Sprintf("register %d job(s)", len(p.Jobs)), err)
	}
	return regs, missing, nil
}
