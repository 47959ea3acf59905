package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/internal/prunesteps"
	"github.com/cronfence/cronfence/store/internal/sqlstore"
)

// Prune deletes slots whose instant, and runs whose start, is before
// p.Before, in steps of at most p.Batch of each, each an immediate
// transaction of its own: a long prune would hold the database's only
// writer, and every claim and finish of every replica would wait for it.
// Each job keeps its latest slot (the greatest instant) and its latest run
// (the greatest id) however old: the latest claim is the record that its
// slot already ran, so a catch-up after a long stop does not run it again,
// and the latest run is the job's "last run" on the dashboard. Resolved
// alerts and silent replicas older than p.Before go too, in the first step
// (see store.Monitor).
//
// Both tables are walked job by job (prunesteps.JobCursor): a job's slots
// older than the cutoff are the start of its primary key range; its runs
// are read through (job, id) until the step has its batch, so a job with
// fewer old runs than that has its newer runs read too (the runs have no
// index by start).
func (s *Store) Prune(ctx context.Context, p store.PruneParams) (store.PruneResult, error) {
	if err := p.Validate(); err != nil {
		return store.PruneResult{}, err
	}
	if s.closed.Load() {
		return store.PruneResult{}, closedError("prune")
	}
	before := micros(sqlstore.Normalize(p.Before))
	var slots, runs prunesteps.JobCursor
	first := true
	return prunesteps.Run(ctx, p, func(ctx context.Context, batch int) (got store.PruneResult, done bool, err error) {
		err = s.inTx(ctx, func(tx *sql.Tx) error {
			var err error
			if got.Slots, err = slots.Step(ctx, batch, nextJob(tx, "cronfence_slots", "slot"), deleteOld(tx, before, "cronfence_slots", "slot", "slot")); err != nil {
				return err
			}
			if got.Runs, err = runs.Step(ctx, batch, nextJob(tx, "cronfence_runs", "id"), deleteOld(tx, before, "cronfence_runs", "id", "started_at")); err != nil {
				return err
			}
			if !first {
				return nil
			}
			// Resolved alerts go by when they were resolved (open ones stay
			// however old); replicas by their last heartbeat: one silent
			// that long crashed without removing its row. Neither is
			// counted.
			if _, err := tx.ExecContext(ctx, `DELETE FROM cronfence_alerts WHERE resolved_at < ?`, before); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `DELETE FROM cronfence_replicas WHERE heartbeat_at < ?`, before)
			return err
		})
		if err != nil {
			return store.PruneResult{}, false, s.errorf(err, "prune")
		}
		first = false
		return got, slots.Done() && runs.Done(), nil
	})
}

// nextJob finds a table's next job and its newest key, for JobCursor.
func nextJob(tx *sql.Tx, table, key string) prunesteps.NextJob {
	return func(ctx context.Context, after string, inclusive bool) (string, any, bool, error) {
		op := ">"
		if inclusive {
			op = ">="
		}
		var job string
		var newest int64
		err := tx.QueryRowContext(ctx, `SELECT job, (SELECT max(`+key+`) FROM `+table+` m WHERE m.job = t.job)
			FROM `+table+` t WHERE job `+op+` ? ORDER BY job LIMIT 1`, after).Scan(&job, &newest)
		if errors.Is(err, sql.ErrNoRows) {
			return "", nil, false, nil
		}
		return job, newest, err == nil, err
	}
}

// deleteOld deletes a job's oldest rows of a table, for JobCursor: those
// whose time column at is before the cutoff and whose key is not the
// newest.
func deleteOld(tx *sql.Tx, before int64, table, key, at string) prunesteps.DeleteOld {
	return func(ctx context.Context, job string, newest any, limit int) (int64, error) {
		res, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE job = ?1 AND `+key+` IN (
			SELECT `+key+` FROM `+table+` WHERE job = ?1 AND `+at+` < ?2 AND `+key+` < ?3 ORDER BY `+key+` LIMIT ?4)`,
			job, before, newest, limit)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	}
}
