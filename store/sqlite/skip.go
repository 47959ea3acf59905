package sqlite

import (
	"context"
	"database/sql"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/internal/sqlstore"
)

// SlotSkip records slots that nobody will run as skipped, each with a skip
// run row, in one immediate transaction. See store.Store.
func (s *Store) SlotSkip(ctx context.Context, items []store.SlotSkipParams) ([]store.Run, error) {
	if err := store.ValidateSkipBatch(items); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, closedError("skip slots")
	}
	if len(items) == 0 {
		return nil, nil
	}
	now := s.now(items[0].Now)
	var runs []store.Run
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		runs = runs[:0]
		for _, p := range items {
			slot, after := sqlstore.Normalize(p.Slot), sqlstore.Normalize(p.After)
			if after.After(now) {
				continue // not given up yet by the database clock
			}
			res, err := tx.ExecContext(ctx, `
				INSERT INTO cronfence_slots (job, slot, status, owner, lease_name, generation, attempts, started_at, finished_at)
				VALUES (?, ?, 'skipped', ?, ?, 0, 0, ?, ?)
				ON CONFLICT (job, slot) DO NOTHING`,
				p.Job, micros(slot), p.Owner, p.LeaseName, micros(now), micros(now))
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n == 0 {
				if err != nil {
					return err
				}
				continue // claimed, run or recorded already
			}
			p.Slot = slot
			run, err := insertRun(ctx, tx, p.Run(now), now)
			if err != nil {
				return err
			}
			runs = append(runs, run)
		}
		return nil
	})
	if err != nil {
		return nil, s.errorf(err, "skip %d slot(s), first of job %q", len(items), items[0].Job)
	}
	return runs, nil
}
