package sqlite

import (
	"context"
	"database/sql"

	"github.com/cronfence/cronfence/store"
)

// Prune deletes slots whose instant, and runs whose start, is before
// p.Before, in one immediate transaction. Each job keeps its latest slot
// (the greatest instant) and its latest run (the greatest id) however old:
// the latest claim is the record that its slot already ran, so a catch-up
// after a long stop does not run it again, and the latest run is the job's
// "last run" on the dashboard. Resolved alerts and silent replicas older
// than p.Before go too (see store.Monitor).
func (s *Store) Prune(ctx context.Context, p store.PruneParams) (res store.PruneResult, err error) {
	if err := p.Validate(); err != nil {
		return store.PruneResult{}, err
	}
	if s.closed.Load() {
		return store.PruneResult{}, closedError("prune")
	}
	before := micros(normalize(p.Before))
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		// The EXISTS probes walk the primary key (job, slot) and the index
		// cronfence_runs_job_id (job, id) respectively.
		slots, err := tx.ExecContext(ctx, `
			DELETE FROM cronfence_slots AS old
			WHERE slot < ?
			  AND EXISTS (SELECT 1 FROM cronfence_slots AS newer WHERE newer.job = old.job AND newer.slot > old.slot)`,
			before)
		if err != nil {
			return err
		}
		if res.Slots, err = slots.RowsAffected(); err != nil {
			return err
		}
		runs, err := tx.ExecContext(ctx, `
			DELETE FROM cronfence_runs AS old
			WHERE started_at < ?
			  AND EXISTS (SELECT 1 FROM cronfence_runs AS newer WHERE newer.job = old.job AND newer.id > old.id)`,
			before)
		if err != nil {
			return err
		}
		if res.Runs, err = runs.RowsAffected(); err != nil {
			return err
		}
		// Resolved alerts go by when they were resolved (open ones stay
		// however old); replicas by their last heartbeat: one silent that
		// long crashed without removing its row. Neither is counted.
		if _, err := tx.ExecContext(ctx, `DELETE FROM cronfence_alerts WHERE resolved_at < ?`, before); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM cronfence_replicas WHERE heartbeat_at < ?`, before)
		return err
	})
	if err != nil {
		return store.PruneResult{}, s.errorf(err, "prune")
	}
	return res, nil
}
