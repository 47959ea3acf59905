package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/internal/sqlstore"
)

// JobStateSet sets or clears (p.Enabled == nil) the job's enabled override,
// recording who, when (the store's clock) and the note; see store.Store.
// Every claim reads it in its own transaction, so the next claim of any
// replica sees it.
func (s *Store) JobStateSet(ctx context.Context, p store.JobStateSetParams) (store.JobState, error) {
	if err := p.Validate(); err != nil {
		return store.JobState{}, err
	}
	if s.closed.Load() {
		return store.JobState{}, closedError("set job state")
	}
	override := sql.NullBool{}
	if p.Enabled != nil {
		override = sql.NullBool{Bool: *p.Enabled, Valid: true}
	}
	now := s.now(time.Time{})
	var js store.JobState
	err := s.inTx(ctx, func(tx *sql.Tx) (err error) {
		js, err = decode.JobState(tx.QueryRowContext(ctx, `
			INSERT INTO cronfence_job_state (`+sqlstore.JobStateColumns+`)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (job) DO UPDATE SET
				enabled_override = excluded.enabled_override,
				override_by      = excluded.override_by,
				override_at      = excluded.override_at,
				note             = excluded.note,
				override_until   = excluded.override_until
			RETURNING `+sqlstore.JobStateColumns,
			p.Job, override, p.By, micros(now), p.Note, nullMicros(p.Until),
		))
		return err
	})
	if err != nil {
		return store.JobState{}, s.errorf(err, "set the state of job %q", p.Job)
	}
	return js, nil
}

// JobStateList returns the state of every job that has one, by name.
func (s *Store) JobStateList(ctx context.Context) ([]store.JobState, error) {
	if s.closed.Load() {
		return nil, closedError("list job states")
	}
	if err := s.checkSchema(ctx, s.db); err != nil {
		return nil, s.errorf(err, "list job states")
	}
	states, err := sqlstore.Query(ctx, s.db, decode.JobState, `SELECT `+sqlstore.JobStateColumns+` FROM cronfence_job_state ORDER BY job`)
	if err != nil {
		return nil, s.errorf(err, "list job states")
	}
	return states, nil
}

// JobRegister records the jobs' first registration, in one immediate
// transaction: a job not seen before is first seen now, or at its earliest
// slot when it has slots from before this record existed. See store.Store.
func (s *Store) JobRegister(ctx context.Context, p store.JobRegisterParams) ([]store.JobRegistration, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, closedError("register jobs")
	}
	if len(p.Jobs) == 0 {
		return nil, nil
	}
	now := micros(s.now(p.Now))
	regs := make([]store.JobRegistration, len(p.Jobs))
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for i, job := range p.Jobs {
			var first time.Time
			err := tx.QueryRowContext(ctx, `
				INSERT INTO cronfence_jobs (job, first_seen_at)
				VALUES (?1, min(?2, coalesce((SELECT min(slot) FROM cronfence_slots WHERE job = ?1), ?2)))
				ON CONFLICT (job) DO UPDATE SET first_seen_at = first_seen_at
				RETURNING first_seen_at`, job, now).Scan(decode.Instant(&first))
			if err != nil {
				return err
			}
			regs[i] = store.JobRegistration{Job: job, FirstSeen: first}
		}
		return nil
	})
	if err != nil {
		return nil, s.errorf(err, "register %d job(s)", len(p.Jobs))
	}
	return regs, nil
}
