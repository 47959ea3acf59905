package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cronfence/cronfence/store"
)

const runColumns = `id, job, slot, manual, catch_up, owner, generation, lease_name, attempt,
	started_at, finished_at, success, skipped, reason, error, logs`

func scanRun(row interface{ Scan(...any) error }) (store.Run, error) {
	var (
		r                 store.Run
		slot              sql.NullInt64
		started, finished int64
		logs              string
	)
	if err := row.Scan(&r.ID, &r.Job, &slot, &r.Manual, &r.CatchUp, &r.Owner, &r.Generation, &r.LeaseName, &r.Attempt,
		&started, &finished, &r.Success, &r.Skipped, &r.Reason, &r.Error, &logs); err != nil {
		return store.Run{}, err
	}
	r.Slot, r.StartedAt, r.FinishedAt = fromNullMicros(slot), fromMicros(started), fromMicros(finished)
	if err := json.Unmarshal([]byte(logs), &r.Logs); err != nil {
		return store.Run{}, fmt.Errorf("run %d: logs: %w", r.ID, err)
	}
	if len(r.Logs) == 0 {
		r.Logs = nil // as Run.Bounded leaves an empty log
	}
	return r, nil
}

// RunInsert writes one run row and returns it as stored: bounded, with its
// id and times in UTC at microsecond precision. A zero StartedAt is now; a
// zero FinishedAt is StartedAt when that was given (a skip is an instant),
// otherwise now.
func (s *Store) RunInsert(ctx context.Context, run store.Run) (store.Run, error) {
	if err := run.Validate(); err != nil {
		return store.Run{}, err
	}
	if s.closed.Load() {
		return store.Run{}, closedError("insert run")
	}
	var stored store.Run
	err := s.inTx(ctx, func(tx *sql.Tx) (err error) {
		stored, err = insertRun(ctx, tx, run.Bounded(), s.now(time.Time{}))
		return err
	})
	if err != nil {
		return store.Run{}, s.errorf(err, "insert run of job %q", run.Job)
	}
	return stored, nil
}

// insertRun writes run, already validated and bounded, and returns it as
// stored, with the time defaults of RunInsert. A holding (lease name,
// generation) has one run row: for one that has it already it writes
// nothing and returns that row.
func insertRun(ctx context.Context, q querier, run store.Run, now time.Time) (store.Run, error) {
	return writeRun(ctx, q, run, now, false)
}

// finishRun is insertRun for a holding's own end (SlotFinish): a finish
// retried after its answer was lost writes nothing and returns the first
// row, but a row another replica wrote for the holding as it found the run
// dead (store.ReasonInterrupted) stands in for the end until it comes, and
// is replaced by it, keeping its id.
func finishRun(ctx context.Context, q querier, run store.Run, now time.Time) (store.Run, error) {
	return writeRun(ctx, q, run, now, true)
}

func writeRun(ctx context.Context, q querier, run store.Run, now time.Time, ownEnd bool) (store.Run, error) {
	run.Slot = normalize(run.Slot)
	run.StartedAt, run.FinishedAt = normalize(run.StartedAt), normalize(run.FinishedAt)
	if run.FinishedAt.IsZero() {
		run.FinishedAt = run.StartedAt // a skip is an instant
	}
	if run.StartedAt.IsZero() {
		run.StartedAt = now
	}
	if run.FinishedAt.IsZero() {
		run.FinishedAt = now
	}
	logs := []byte("[]")
	if len(run.Logs) > 0 {
		var err error
		if logs, err = json.Marshal(run.Logs); err != nil {
			return store.Run{}, err
		}
	}
	conflict := `DO NOTHING`
	if ownEnd {
		conflict = `DO UPDATE SET job = excluded.job, slot = excluded.slot, manual = excluded.manual,
			catch_up = excluded.catch_up, owner = excluded.owner, attempt = excluded.attempt,
			started_at = excluded.started_at, finished_at = excluded.finished_at, success = excluded.success,
			skipped = excluded.skipped, reason = excluded.reason, error = excluded.error, logs = excluded.logs
			WHERE cronfence_runs.reason = '` + store.ReasonInterrupted + `'`
	}
	err := q.QueryRowContext(ctx, `
		INSERT INTO cronfence_runs (job, slot, manual, catch_up, owner, generation, lease_name, attempt,
			started_at, finished_at, success, skipped, reason, error, logs)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (lease_name, generation) WHERE lease_name <> '' `+conflict+`
		RETURNING id`,
		run.Job, nullMicros(run.Slot), run.Manual, run.CatchUp, run.Owner, run.Generation, run.LeaseName, run.Attempt,
		micros(run.StartedAt), micros(run.FinishedAt), run.Success, run.Skipped, run.Reason, run.Error, string(logs),
	).Scan(&run.ID)
	if errors.Is(err, sql.ErrNoRows) {
		// The holding's row is there already (only a holding's insert can
		// conflict): return it.
		return scanRun(q.QueryRowContext(ctx,
			`SELECT `+runColumns+` FROM cronfence_runs WHERE lease_name = ? AND generation = ?`, run.LeaseName, run.Generation))
	}
	if err != nil {
		return store.Run{}, err
	}
	return run, nil
}

// RunGet returns the run row of a holding, through the unique index on
// (lease_name, generation). See store.Store.
func (s *Store) RunGet(ctx context.Context, leaseName string, generation int64) (store.Run, error) {
	if err := store.ValidateHolding(leaseName, generation); err != nil {
		return store.Run{}, err
	}
	if s.closed.Load() {
		return store.Run{}, closedError("get run")
	}
	if err := s.checkSchema(ctx, s.db); err != nil {
		return store.Run{}, s.errorf(err, "get the run of lease %q at generation %d", leaseName, generation)
	}
	run, err := scanRun(s.db.QueryRowContext(ctx,
		`SELECT `+runColumns+` FROM cronfence_runs WHERE lease_name = ? AND generation = ? AND lease_name <> ''`, leaseName, generation))
	if err != nil {
		return store.Run{}, s.errorf(err, "get the run of lease %q at generation %d", leaseName, generation)
	}
	return run, nil
}

// RunList returns run rows newest start first (see store.Store), optionally
// of one job and past the cursor p.Before, at most p.EffectiveLimit() of
// them. The query is built from only the conditions in use so SQLite can
// walk cronfence_runs_job_started (migration 6) backwards and stop at the
// limit.
func (s *Store) RunList(ctx context.Context, p store.RunListParams) ([]store.Run, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, closedError("list runs")
	}
	if err := s.checkSchema(ctx, s.db); err != nil {
		return nil, s.errorf(err, "list runs")
	}
	var (
		where []string
		args  []any
	)
	if p.Job != "" {
		where, args = append(where, "job = ?"), append(args, p.Job)
	}
	if c := p.Before; !c.IsZero() {
		where, args = append(where, "(started_at, id) < (?, ?)"), append(args, micros(normalize(c.StartedAt)), c.ID)
	}
	query := `SELECT ` + runColumns + ` FROM cronfence_runs`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY started_at DESC, id DESC LIMIT ?`
	args = append(args, p.EffectiveLimit())

	runs, err := listRuns(ctx, s.db, query, args)
	if err != nil {
		return nil, s.errorf(err, "list runs")
	}
	return runs, nil
}

// RunListPerJob returns each job's newest runs: one indexed query a job,
// in one read transaction, so the lists are of one moment. See
// store.Store.
func (s *Store) RunListPerJob(ctx context.Context, p store.RunListPerJobParams) ([][]store.Run, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, closedError("list runs per job")
	}
	if err := s.checkSchema(ctx, s.db); err != nil {
		return nil, s.errorf(err, "list runs per job")
	}
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, s.errorf(err, "list runs per job")
	}
	defer tx.Rollback() //nolint:errcheck // read only
	out := make([][]store.Run, len(p.Jobs))
	for i, job := range p.Jobs {
		if out[i], err = listRuns(ctx, tx, `SELECT `+runColumns+` FROM cronfence_runs WHERE job = ? ORDER BY id DESC LIMIT ?`, []any{job, p.Limit}); err != nil {
			return nil, s.errorf(err, "list runs of job %q", job)
		}
	}
	return out, nil
}

func listRuns(ctx context.Context, q querier, query string, args []any) ([]store.Run, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var runs []store.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, rows.Err()
}

// RunInterrupted records dead holdings' attempts as interrupted run rows,
// in one immediate transaction. See store.Store.
func (s *Store) RunInterrupted(ctx context.Context, items []store.RunInterruptedParams) ([]store.Run, error) {
	if err := store.ValidateInterruptedBatch(items); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, closedError("record interrupted runs")
	}
	if len(items) == 0 {
		return nil, nil
	}
	now := s.now(items[0].Now)
	var runs []store.Run
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		runs = runs[:0]
		for _, p := range items {
			p.Slot = normalize(p.Slot)
			var (
				attempts     int
				started      int64
				lease        store.Lease
				name         sql.NullString
				gen, expires sql.NullInt64
			)
			err := tx.QueryRowContext(ctx, `
				SELECT s.attempts, s.started_at, l.name, l.generation, l.expires_at
				  FROM cronfence_slots s
				  LEFT JOIN cronfence_leases l ON l.name = s.lease_name
				 WHERE s.job = ? AND s.slot = ? AND s.status = 'running'
				   AND s.lease_name = ? AND s.owner = ? AND s.generation = ?`,
				p.Job, micros(p.Slot), p.LeaseName, p.Owner, p.Generation,
			).Scan(&attempts, &started, &name, &gen, &expires)
			if errors.Is(err, sql.ErrNoRows) {
				continue // ended, or resumed: no longer this holding's
			}
			if err != nil {
				return err
			}
			lease.Name, lease.Generation, lease.ExpiresAt = name.String, gen.Int64, fromNullMicros(expires)
			dead, how, ended := store.DeadHolding(p.Generation, lease, false, now)
			if !dead {
				continue
			}
			run, err := insertRun(ctx, tx, p.Run(attempts, fromMicros(started), how, ended), now)
			if err != nil {
				return err
			}
			runs = append(runs, run)
		}
		return nil
	})
	if err != nil {
		return nil, s.errorf(err, "record %d interrupted run(s), first of job %q", len(items), items[0].Job)
	}
	return runs, nil
}
