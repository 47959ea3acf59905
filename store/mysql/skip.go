package mysql

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/internal/sqlstore"
)

// SlotSkip records slots that nobody will run as skipped, each with a skip
// run row, in one transaction. See store.Store. It takes no lease row: a
// slot is skipped precisely when its lease may be locked by a deposed
// writer. A slot that has a row already (claimed, run or recorded) is
// passed over: the insert finds it a duplicate, and waits for a concurrent
// insert of it to commit first.
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
	var runs []store.Run
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		runs = runs[:0]
		now, err := s.now(ctx, tx, items[0].Now)
		if err != nil {
			return err
		}
		for _, p := range items {
			slot, after := sqlstore.Normalize(p.Slot), sqlstore.Normalize(p.After)
			if after.After(now) {
				continue // not given up yet by the database clock
			}
			err := s.insertSlot(ctx, tx, store.Slot{Job: p.Job, Slot: slot, Status: store.SlotSkipped, Owner: p.Owner,
				LeaseName: p.LeaseName, StartedAt: now, FinishedAt: now})
			if errors.Is(err, errRaced) {
				continue // claimed, run or recorded already
			}
			if err != nil {
				return err
			}
			p.Slot = slot
			run, err := s.insertRun(ctx, tx, p.Run(now), now)
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

func joinComma(parts []string) string { return strings.Join(parts, ", ") }
