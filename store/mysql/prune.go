package mysql

import (
	"context"
	"database/sql"

	"github.com/cronfence/cronfence/store"
)

// Prune deletes slots whose instant, and runs whose start, is before
// p.Before, in one transaction. Each job keeps its latest slot and its
// latest run however old (see the other stores). Resolved alerts and
// silent replicas older than p.Before go too (see store.Monitor).
func (s *Store) Prune(ctx context.Context, p store.PruneParams) (res store.PruneResult, err error) {
	if err := p.Validate(); err != nil {
		return store.PruneResult{}, err
	}
	if s.closed.Load() {
		return store.PruneResult{}, closedError("prune")
	}
	before := normalize(p.Before)
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		res = store.PruneResult{}
		// MySQL cannot read the table a DELETE deletes from in a
		// subquery; a join to each job's newest row can.
		slots, err := tx.ExecContext(ctx, `DELETE old FROM `+s.t("slots")+` old
			JOIN (SELECT job, max(slot) AS newest FROM `+s.t("slots")+` GROUP BY job) n ON n.job = old.job
			WHERE old.slot < ? AND old.slot < n.newest`, before)
		if err != nil {
			return err
		}
		if res.Slots, err = slots.RowsAffected(); err != nil {
			return err
		}
		runs, err := tx.ExecContext(ctx, `DELETE old FROM `+s.t("runs")+` old
			JOIN (SELECT job, max(id) AS newest FROM `+s.t("runs")+` GROUP BY job) n ON n.job = old.job
			WHERE old.started_at < ? AND old.id < n.newest`, before)
		if err != nil {
			return err
		}
		if res.Runs, err = runs.RowsAffected(); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+s.t("alerts")+` WHERE resolved_at < ?`, before); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM `+s.t("replicas")+` WHERE heartbeat_at < ?`, before)
		return err
	})
	if err != nil {
		return store.PruneResult{}, s.errorf(err, "prune")
	}
	return res, nil
}
