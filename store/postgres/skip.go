package postgres

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cronfence/cronfence/store"
)

// SlotSkip records slots that nobody will run as skipped, each with a skip
// run row, in one statement. See store.Store and sql/slotSkip.sql.
func (s *Store) SlotSkip(ctx context.Context, items []store.SlotSkipParams) ([]store.Run, error) {
	if err := store.ValidateSkipBatch(items); err != nil {
		return nil, err
	}
	if err := s.usable(); err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, nil
	}
	// Slot rows in the order claims lock them (lease name, then slot), so
	// that a skip and a claim batch cannot deadlock.
	items = append([]store.SlotSkipParams(nil), items...)
	sort.SliceStable(items, func(a, b int) bool {
		if items[a].LeaseName != items[b].LeaseName {
			return items[a].LeaseName < items[b].LeaseName
		}
		return items[a].Slot.Before(items[b].Slot)
	})
	n := len(items)
	var (
		jobs, leaseNames, reasons, logs = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		slots, afters                   = make([]time.Time, n), make([]time.Time, n)
		catchUp                         = make([]bool, n)
	)
	for i, p := range items {
		jobs[i], slots[i], leaseNames[i], afters[i] = p.Job, slotTime(p.Slot), p.LeaseName, p.After.UTC()
		catchUp[i], reasons[i] = p.CatchUp, string(p.Reason)
		if bounded := p.Run(time.Time{}).Logs; len(bounded) > 0 {
			logs[i] = bounded[0]
		}
	}
	rows, err := s.pool.Query(ctx, s.q.slotSkip, jobs, slots, leaseNames, afters, catchUp, reasons, logs,
		items[0].Owner, s.nowArg(items[0].Now))
	if err != nil {
		return nil, s.translate(fmt.Sprintf("skip %d slot(s), first of job %q", n, items[0].Job), err)
	}
	runs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Run, error) {
		var sr scannedRun
		err := row.Scan(sr.dest()...)
		return sr.run(), err
	})
	if err != nil {
		return nil, s.translate(fmt.Sprintf("skip %d slot(s), first of job %q", n, items[0].Job), err)
	}
	return runs, nil
}
