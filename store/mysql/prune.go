package mysql

import (
	"context"
	"database/sql"
	"errors"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/internal/prunesteps"
	"github.com/cronfence/cronfence/store/internal/sqlstore"
)

// Prune deletes slots whose instant, and runs whose start, is before
// p.Before, in steps of at most p.Batch of each, each a transaction of its
// own, walking both tables job by job as the SQLite store does (see
// there). Each job keeps its latest slot and its latest run however old.
// Resolved alerts and silent replicas older than p.Before go too, in the
// first step (see store.Monitor).
func (s *Store) Prune(ctx context.Context, p store.PruneParams) (store.PruneResult, error) {
	if err := p.Validate(); err != nil {
		return store.PruneResult{}, err
	}
	if s.closed.Load() {
		return store.PruneResult{}, closedError("prune")
	}
	before := sqlstore.Normalize(p.Before)
	var slots, runs prunesteps.JobCursor
	first := true
	return prunesteps.Run(ctx, p, func(ctx context.Context, batch int) (got store.PruneResult, done bool, err error) {
		err = s.inTx(ctx, func(tx *sql.Tx) error {
			var err error
			if got.Slots, err = slots.Step(ctx, batch, s.nextJob(tx, "slots", "slot"), s.deleteOld(tx, before, "slots", "slot", "slot")); err != nil {
				return err
			}
			if got.Runs, err = runs.Step(ctx, batch, s.nextJob(tx, "runs", "id"), s.deleteOld(tx, before, "runs", "id", "started_at")); err != nil {
				return err
			}
			if !first {
				return nil
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+s.t("alerts")+` WHERE resolved_at < ?`, before); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `DELETE FROM `+s.t("replicas")+` WHERE heartbeat_at < ?`, before)
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
func (s *Store) nextJob(tx *sql.Tx, table, key string) prunesteps.NextJob {
	return func(ctx context.Context, after string, inclusive bool) (string, any, bool, error) {
		op := ">"
		if inclusive {
			op = ">="
		}
		var job string
		var newest any
		err := tx.QueryRowContext(ctx, `SELECT job, (SELECT max(`+key+`) FROM `+s.t(table)+` m WHERE m.job = t.job)
			FROM `+s.t(table)+` t WHERE job `+op+` ? ORDER BY job LIMIT 1`, after).Scan(&job, &newest)
		if errors.Is(err, sql.ErrNoRows) {
			return "", nil, false, nil
		}
		return job, newest, err == nil, err
	}
}

// deleteOld deletes a job's oldest rows of a table, for JobCursor: those
// whose time column at is before the cutoff and whose key is not the
// newest. MySQL deletes with ORDER BY and LIMIT, where a subquery of the
// table deleted from is refused.
func (s *Store) deleteOld(tx *sql.Tx, before any, table, key, at string) prunesteps.DeleteOld {
	return func(ctx context.Context, job string, newest any, limit int) (int64, error) {
		res, err := tx.ExecContext(ctx, `DELETE FROM `+s.t(table)+` WHERE job = ? AND `+at+` < ? AND `+key+` < ? ORDER BY `+key+` LIMIT ?`,
			job, before, newest, limit)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	}
}
