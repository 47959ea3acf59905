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
	js, err := scanJobState(s.pool.QueryRow(ctx, s.q.jobStateSet, p.Job, p.Enabled, p.By, p.Note, s.nowArg(time.Time{})))
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
	err := row.Scan(&js.Job, &js.EnabledOverride, &js.OverrideBy, &js.OverrideAt, &js.Note)
	js.OverrideAt = js.OverrideAt.UTC()
	return js, err
}
