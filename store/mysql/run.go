package mysql

import (
	"context"
	"database/sql"
	"errors"
	"strings"
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
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		now, err := s.now(ctx, tx, time.Time{})
		if err != nil {
			return err
		}
		stored, err = s.insertRun(ctx, tx, run.Bounded(), now)
		return err
	})
	if err != nil {
		return store.Run{}, s.errorf(err, "insert run of job %q", run.Job)
	}
	return stored, nil
}

// insertRun writes run, already validated and bounded, and returns it as
// stored, with the time defaults of RunInsert. A holding (lease name,
// generation) has one run row: for one that has it already (a finish
// retried after its answer was lost) it writes nothing and returns that
// row. The insert waits for a concurrent insert of the same holding and
// then finds it a duplicate.
func (s *Store) insertRun(ctx context.Context, tx *sql.Tx, run store.Run, now time.Time) (store.Run, error) {
	stored, _, err := s.writeRun(ctx, tx, run, now, "", false)
	return stored, err
}

// insertRunBuffered is insertRun that also reads, in the same round trip,
// the job's earliest buffered slot (zero when none): what a run's end
// reports.
func (s *Store) insertRunBuffered(ctx context.Context, tx *sql.Tx, run store.Run, now time.Time) (store.Run, time.Time, error) {
	return s.writeRun(ctx, tx, run, now, run.Job, false)
}

// finishRunBuffered is insertRunBuffered for a holding's own end
// (SlotFinish): a finish retried after its answer was lost writes nothing
// and returns the first row, but a row another replica wrote for the
// holding as it found the run dead (store.ReasonInterrupted) stands in
// for the end until it comes, and is replaced by it, keeping its id.
func (s *Store) finishRunBuffered(ctx context.Context, tx *sql.Tx, run store.Run, now time.Time) (store.Run, time.Time, error) {
	return s.writeRun(ctx, tx, run, now, run.Job, true)
}

// writeRun is insertRun, insertRunBuffered when bufferedOf names the job,
// and finishRunBuffered with ownEnd.
func (s *Store) writeRun(ctx context.Context, tx *sql.Tx, run store.Run, now time.Time, bufferedOf string, ownEnd bool) (store.Run, time.Time, error) {
	run, logs, err := sqlstore.RunRow(run, now)
	if err != nil {
		return store.Run{}, time.Time{}, err
	}
	var buffered time.Time
	err = resultSets(ctx, tx, insertRunSQL(s)+`; SELECT LAST_INSERT_ID(), (SELECT min(slot) FROM `+s.t("slots")+` WHERE job = ? AND status = 'buffered')`,
		[]any{run.Job, nullTime(run.Slot), run.Manual, run.CatchUp, run.Owner, run.Generation, run.LeaseName, run.Attempt,
			run.StartedAt, run.FinishedAt, run.Success, run.Skipped, run.Reason, run.Error, logs, bufferedOf},
		func(_ int, rows *sql.Rows) error { return rows.Scan(&run.ID, decode.Instant(&buffered)) })
	if mysqlCode(err) == errDupKey && run.LeaseName != "" {
		// The holding's row is there already: return it, or replace it.
		stored, err := decode.Run(tx.QueryRowContext(ctx, `SELECT `+sqlstore.RunColumns+` FROM `+s.t("runs")+` WHERE holding_name = ? AND generation = ?`,
			run.LeaseName, run.Generation))
		if err == nil && ownEnd && stored.Reason == store.ReasonInterrupted {
			run.ID = stored.ID
			stored = run
			_, err = tx.ExecContext(ctx, `UPDATE `+s.t("runs")+` SET job = ?, slot = ?, manual = ?, catch_up = ?, owner = ?, attempt = ?,
				started_at = ?, finished_at = ?, success = ?, skipped = ?, reason = ?, error = ?, logs = ? WHERE id = ?`,
				run.Job, nullTime(run.Slot), run.Manual, run.CatchUp, run.Owner, run.Attempt,
				run.StartedAt, run.FinishedAt, run.Success, run.Skipped, run.Reason, run.Error, logs, run.ID)
		}
		if err != nil || bufferedOf == "" {
			return stored, time.Time{}, err
		}
		b, err := s.earliestBuffered(ctx, tx, bufferedOf)
		return stored, b, err
	}
	if err != nil {
		return store.Run{}, time.Time{}, err
	}
	return run, buffered, nil
}

// insertRunSQL is the insert of one run row; its arguments are
// sqlstore.RunRow's columns in sqlstore.RunColumns' order, without the id.
func insertRunSQL(s *Store) string {
	return `INSERT INTO ` + s.t("runs") + ` (job, slot, manual, catch_up, owner, generation, lease_name, attempt,
			started_at, finished_at, success, skipped, reason, error, logs)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
}

// RunGet returns the run row of a holding, through the unique key on
// (holding_name, generation). See store.Store.
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
		`SELECT `+sqlstore.RunColumns+` FROM `+s.t("runs")+` WHERE holding_name = ? AND generation = ?`, leaseName, generation))
	if err != nil {
		return store.Run{}, s.errorf(err, "get the run of lease %q at generation %d", leaseName, generation)
	}
	return run, nil
}

// RunList returns run rows newest start first (see store.Store), optionally
// of one job and past the cursor p.Before, at most p.EffectiveLimit() of
// them, walking runs_job_started (migration 3) backwards (see
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
	runs, err := s.listRuns(ctx, s.db, p)
	if err != nil {
		return nil, s.errorf(err, "list runs")
	}
	return runs, nil
}

func (s *Store) listRuns(ctx context.Context, q sqlstore.Querier, p store.RunListParams) ([]store.Run, error) {
	query, args := sqlstore.RunListQuery(s.t("runs"), p, func(c store.RunCursor) (string, []any) {
		// Spelled out rather than as a row comparison, which not every
		// server turns into a range of the index.
		at := sqlstore.Normalize(c.StartedAt)
		return "(started_at < ? OR (started_at = ? AND id < ?))", []any{at, at, c.ID}
	})
	return sqlstore.Query(ctx, q, decode.Run, query, args...)
}

// RunListPerJob returns each job's newest runs in one statement: a
// UNION ALL of one indexed, limited read a job. See store.Store.
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
	out := make([][]store.Run, len(p.Jobs))
	if len(p.Jobs) == 0 {
		return out, nil
	}
	// One read a distinct job; a job named twice shares its list.
	var parts []string
	var args []any
	index := make(map[string][]int, len(p.Jobs))
	for i, job := range p.Jobs {
		if _, seen := index[job]; !seen {
			parts = append(parts, `(SELECT `+sqlstore.RunColumns+` FROM `+s.t("runs")+` WHERE job = ? ORDER BY id DESC LIMIT ?)`)
			args = append(args, job, p.Limit)
		}
		index[job] = append(index[job], i)
	}
	runs, err := sqlstore.Query(ctx, s.db, decode.Run, strings.Join(parts, " UNION ALL "), args...)
	if err != nil {
		return nil, s.errorf(err, "list runs per job")
	}
	for _, r := range runs {
		for _, i := range index[r.Job] {
			out[i] = append(out[i], r)
		}
	}
	return out, nil
}

// RunInterrupted records dead holdings' attempts as interrupted run rows,
// in one transaction. See store.Store. It locks no slot or lease row:
// the holding's run row is the only thing written, and a concurrent
// insert of the same holding's row waits for this one and finds it a
// duplicate.
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
	var runs []store.Run
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		runs = runs[:0]
		now, err := s.now(ctx, tx, items[0].Now)
		if err != nil {
			return err
		}
		for _, p := range items {
			p.Slot = sqlstore.Normalize(p.Slot)
			var (
				attempts int
				started  time.Time
				lease    store.Lease
				gone     bool
			)
			err := tx.QueryRowContext(ctx, `
				SELECT s.attempts, s.started_at, COALESCE(l.name, ''), COALESCE(l.generation, 0),
				       COALESCE(l.expires_at, s.started_at),
				       COALESCE(l.live_key IS NOT NULL AND IS_FREE_LOCK(CONCAT('cronfence.live.', l.live_key)) = 1, FALSE)
				  FROM `+s.t("slots")+` s
				  LEFT JOIN `+s.t("leases")+` l ON l.name = s.lease_name
				 WHERE s.job = ? AND s.slot = ? AND s.status = 'running'
				   AND s.lease_name = ? AND s.owner = ? AND s.generation = ?`,
				p.Job, p.Slot, p.LeaseName, p.Owner, p.Generation,
			).Scan(&attempts, decode.Instant(&started), &lease.Name, &lease.Generation, decode.Instant(&lease.ExpiresAt), &gone)
			if errors.Is(err, sql.ErrNoRows) {
				continue // ended, or resumed: no longer this holding's
			}
			if err != nil {
				return err
			}
			dead, how, ended := store.DeadHolding(p.Generation, lease, gone, now)
			if !dead {
				continue
			}
			run, err := s.insertRun(ctx, tx, p.Run(attempts, started, how, ended), now)
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
