package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/internal/sqlstore"
)

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
func insertRun(ctx context.Context, q sqlstore.Querier, run store.Run, now time.Time) (store.Run, error) {
	return writeRun(ctx, q, run, now, false)
}

// finishRun is insertRun for a holding's own end (SlotFinish): a finish
// retried after its answer was lost writes nothing and returns the first
// row, but a row another replica wrote for the holding as it found the run
// dead (store.ReasonInterrupted) stands in for the end until it comes, and
// is replaced by it, keeping its id.
func finishRun(ctx context.Context, q sqlstore.Querier, run store.Run, now time.Time) (store.Run, error) {
	return writeRun(ctx, q, run, now, true)
}

func writeRun(ctx context.Context, q sqlstore.Querier, run store.Run, now time.Time, ownEnd bool) (store.Run, error) {
	run, logs, err := sqlstore.RunRow(run, now)
	if err != nil {
		return store.Run{}, err
	}
	conflict := `DO NOTHING`
	if ownEnd {
		conflict = `DO UPDATE SET job = excluded.job, slot = excluded.slot, manual = excluded.manual,
			catch_up = excluded.catch_up, owner = excluded.owner, attempt = excluded.attempt,
			started_at = excluded.started_at, finished_at = excluded.finished_at, success = excluded.success,
			skipped = excluded.skipped, reason = excluded.reason, error = excluded.error, logs = excluded.logs
			WHERE cronfence_runs.reason = '` + store.ReasonInterrupted + `'`
	}
	err = q.QueryRowContext(ctx, `
		INSERT INTO cronfence_runs (job, slot, manual, catch_up, owner, generation, lease_name, attempt,
			started_at, finished_at, success, skipped, reason, error, logs)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (lease_name, generation) WHERE lease_name <> '' `+conflict+`
		RETURNING id`,
		run.Job, nullMicros(run.Slot), run.Manual, run.CatchUp, run.Owner, run.Generation, run.LeaseName, run.Attempt,
		micros(run.StartedAt), micros(run.FinishedAt), run.Success, run.Skipped, run.Reason, run.Error, logs,
	).Scan(&run.ID)
	if errors.Is(err, sql.ErrNoRows) {
		// The holding's row is there already (only a holding's insert can
		// conflict): return it.
		return decode.Run(q.QueryRowContext(ctx,
			`SELECT `+sqlstore.RunColumns+` FROM cronfence_runs WHERE lease_name = ? AND generation = ?`, run.LeaseName, run.Generation))
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
	run, err := decode.Run(s.db.QueryRowContext(ctx,
		`SELECT `+sqlstore.RunColumns+` FROM cronfence_runs WHERE lease_name = ? AND generation = ? AND lease_name <> ''`, leaseName, generation))
	if err != nil {
		return store.Run{}, s.errorf(err, "get the run of lease %q at generation %d", leaseName, generation)
	}
	return run, nil
}

// RunList returns run rows newest start first (see store.Store), optionally
// of one job and past the cursor p.Before, at most p.EffectiveLimit() of
// them, walking cronfence_runs_job_started (migration 6) backwards (see
// sqlstore.RunListQuery).
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
	query, args := sqlstore.RunListQuery("cronfence_runs", p, func(c store.RunCursor) (string, []any) {
		return "(started_at, id) < (?, ?)", []any{micros(sqlstore.Normalize(c.StartedAt)), c.ID}
	})
	runs, err := sqlstore.Query(ctx, s.db, decode.Run, query, args...)
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
		if out[i], err = sqlstore.Query(ctx, tx, decode.Run, `SELECT `+sqlstore.RunColumns+` FROM cronfence_runs WHERE job = ? ORDER BY id DESC LIMIT ?`, job, p.Limit); err != nil {
			return nil, s.errorf(err, "list runs of job %q", job)
		}
	}
	return out, nil
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
			p.Slot = sqlstore.Normalize(p.Slot)
			var (
				attempts int
				started  time.Time
				lease    store.Lease
				name     sql.NullString
				gen      sql.NullInt64
			)
			err := tx.QueryRowContext(ctx, `
				SELECT s.attempts, s.started_at, l.name, l.generation, l.expires_at
				  FROM cronfence_slots s
				  LEFT JOIN cronfence_leases l ON l.name = s.lease_name
				 WHERE s.job = ? AND s.slot = ? AND s.status = 'running'
				   AND s.lease_name = ? AND s.owner = ? AND s.generation = ?`,
				p.Job, micros(p.Slot), p.LeaseName, p.Owner, p.Generation,
			).Scan(&attempts, decode.Instant(&started), &name, &gen, decode.Instant(&lease.ExpiresAt))
			if errors.Is(err, sql.ErrNoRows) {
				continue // ended, or resumed: no longer this holding's
			}
			if err != nil {
				return err
			}
			lease.Name, lease.Generation = name.String, gen.Int64
			dead, how, ended := store.DeadHolding(p.Generation, lease, false, now)
			if !dead {
				continue
			}
			run, err := insertRun(ctx, tx, p.Run(attempts, started, how, ended), now)
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
