package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cronfence/cronfence/store"
)

// SlotSkip records slots that nobody will run as skipped, each with a skip
// run row, in one statement, sent again while it would wait for slot rows
// another statement is writing (skipLockWait). See store.Store and
// sql/slotSkip.sql.
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
	// Slot rows in one order (lease name, then slot), so that two skips
	// cannot deadlock. (A claim writes its slot rows in no set order:
	// skipLockWait.)
	given := items
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
	args := []any{jobs, slots, leaseNames, afters, catchUp, reasons, logs, items[0].Owner, s.nowArg(items[0].Now)}
	settings := []string{skipLockWaitSQL}
	if n > genericPlanMax {
		settings = append(settings, largeBatchSQL)
	}
	what := fmt.Sprintf("skip %d slot(s), first of job %q", n, items[0].Job)
	for attempt := 1; ; attempt++ {
		runs, err := s.skipOnce(ctx, settings, args)
		if err == nil {
			return inItemsOrder(given, runs), nil
		}
		if !isLockTimeout(err) || attempt == skipAttempts {
			return nil, s.translate(what, err)
		}
		select {
		case <-ctx.Done():
			return nil, s.translate(what, context.Cause(ctx))
		case <-time.After(min(skipLockWait<<(attempt-1), time.Second)):
		}
	}
}

// A skip waits for no slot row another statement is writing for longer
// than skipLockWait: it gives up (writing nothing) and tries again, after
// a pause that doubles from skipLockWait to at most a second (a large
// claim can take seconds under load, and a large skip repeats its work up
// to the slot it waited for), up to skipAttempts times: about 15 s in all,
// unless its context ends first. Claims write their slot rows in no set
// order (a claim's own, the overlaps it records, the paused slots it
// settles, each in a part of the statement of its own), so a skip, which
// writes in order, and a claim writing some of the same slots (a replica
// that fell behind records the slots it passed over while the others
// claim them) could each wait for the other: PostgreSQL broke that
// deadlock only after deadlock_timeout (1 s), every claim concerned
// waiting meanwhile, and a replica behind under load met it several times
// a minute.
const (
	skipLockWait    = 20 * time.Millisecond
	skipLockWaitSQL = "SET LOCAL lock_timeout = '20ms'"
	skipAttempts    = 20
)

func (s *Store) skipOnce(ctx context.Context, settings []string, args []any) ([]store.Run, error) {
	rows, err := s.queryBehind(ctx, settings, s.q.slotSkip, args)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Run, error) {
		var sr scannedRun
		err := row.Scan(sr.dest()...)
		return sr.run(), err
	})
}

// isLockTimeout reports whether err is a statement given up for
// lock_timeout (SQLSTATE 55P03).
func isLockTimeout(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55P03"
}

// inItemsOrder returns runs, the rows written for some of items in
// another order, in the items' order (the statement writes them sorted, to
// take the slot rows' locks in one order).
func inItemsOrder(items []store.SlotSkipParams, runs []store.Run) []store.Run {
	type key struct {
		job  string
		slot int64
	}
	byKey := make(map[key]store.Run, len(runs))
	for _, r := range runs {
		byKey[key{r.Job, r.Slot.UnixMicro()}] = r
	}
	out := make([]store.Run, 0, len(runs))
	for _, p := range items {
		if r, ok := byKey[key{p.Job, slotTime(p.Slot).UnixMicro()}]; ok {
			out = append(out, r)
		}
	}
	return out
}
