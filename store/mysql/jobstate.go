package mysql

import (
	"context"
	"database/sql"
	"time"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/internal/sqlstore"
)

// JobStateSet sets or clears (p.Enabled == nil) the job's enabled override,
// recording who, when (the store's clock) and the note; see store.Store.
// Every claim reads it after locking its lease, so the next claim of any
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
	var js store.JobState
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		now, err := s.now(ctx, tx, time.Time{})
		if err != nil {
			return err
		}
		until := sqlstore.Normalize(p.Until)
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+s.t("job_state")+` (`+sqlstore.JobStateColumns+`) VALUES (?, ?, ?, ?, ?, ?)
			ON DUPLICATE KEY UPDATE enabled_override = VALUES(enabled_override), override_by = VALUES(override_by),
			                        override_at = VALUES(override_at), note = VALUES(note), override_until = VALUES(override_until)`,
			p.Job, override, p.By, now, p.Note, nullTime(until)); err != nil {
			return err
		}
		js = store.JobState{Job: p.Job, OverrideBy: p.By, OverrideAt: now, Note: p.Note, Until: until}
		if p.Enabled != nil {
			enabled := *p.Enabled
			js.EnabledOverride = &enabled
		}
		return nil
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
	states, err := s.listJobStates(ctx, s.db)
	if err != nil {
		return nil, s.errorf(err, "list job states")
	}
	return states, nil
}

func (s *Store) listJobStates(ctx context.Context, q sqlstore.Querier) ([]store.JobState, error) {
	return sqlstore.Query(ctx, q, decode.JobState, `SELECT `+sqlstore.JobStateColumns+` FROM `+s.t("job_state")+` ORDER BY job`)
}

// JobRegister records the jobs' first registration, in one transaction: a
// job not seen before is first seen now, or at its earliest slot when it
// has slots from before this record existed. See store.Store. Two
// statements: the insert of the new ones, and the read of all.
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
	regs := make([]store.JobRegistration, len(p.Jobs))
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		now, err := s.now(ctx, tx, p.Now)
		if err != nil {
			return err
		}
		// In chunks: a statement's placeholders are limited (65,535).
		const chunk = 1000
		first := make(map[string]time.Time, len(p.Jobs))
		for at := 0; at < len(p.Jobs); at += chunk {
			jobs := p.Jobs[at:min(at+chunk, len(p.Jobs))]
			values := make([]string, len(jobs))
			args := make([]any, 0, 3*len(jobs))
			for i, job := range jobs {
				values[i] = `(?, LEAST(?, COALESCE((SELECT min(slot) FROM ` + s.t("slots") + ` WHERE job = ?), ?)))`
				args = append(args, job, now, job, now)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO `+s.t("jobs")+` (job, first_seen_at) VALUES `+
				joinComma(values)+` ON DUPLICATE KEY UPDATE job = job`, args...); err != nil {
				return err
			}
			read := make([]any, len(jobs))
			for i, job := range jobs {
				read[i] = job
			}
			rows, err := tx.QueryContext(ctx, `SELECT job, first_seen_at FROM `+s.t("jobs")+` WHERE job IN (`+placeholders(len(read))+`)`, read...)
			if err != nil {
				return err
			}
			for rows.Next() {
				var job string
				var at time.Time
				if err := rows.Scan(&job, decode.Instant(&at)); err != nil {
					rows.Close()
					return err
				}
				first[job] = at
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		for i, job := range p.Jobs {
			regs[i] = store.JobRegistration{Job: job, FirstSeen: first[job]}
		}
		return nil
	})
	if err != nil {
		return nil, s.errorf(err, "register %d job(s)", len(p.Jobs))
	}
	return regs, nil
}
