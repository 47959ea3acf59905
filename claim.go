package cronfence

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/cronfence/cronfence/store"
)

// Fires: every job due at an instant claimed in one bounded round trip,
// the winners started, the refusals handled.

// fire claims every due entry in one round trip and starts the winners.
func (s *Scheduler) fire(ctx context.Context, due []*entry, now time.Time) {
	items := make([]store.SlotClaimParams, 0, len(due))
	claimed := make([]*entry, 0, len(due))
	// One claim per lease in a batch: when two slots of a job are due
	// together (a retry and the next slot), the earlier goes now and the
	// later on the next pass.
	sort.Slice(due, func(i, j int) bool { return due[i].slot.Before(due[j].slot) })
	leases := make(map[string]bool, len(due))
	passedBy := map[*entry][]store.SlotSkipParams{} // slots each entry's stall passed over
	for _, e := range due {
		if !e.retry {
			if latest := e.job.sched.Prev(now); latest.After(e.slot) {
				// The host slept or the clock jumped past several slots: fire
				// the latest, and record the others as passed over (below,
				// after the claims) where no replica ran them, unless the
				// job is paused: a paused job's slots are not runs owed.
				s.log.Warn("cronfence: slots passed while the scheduler could not fire", "job", e.job.Name,
					"first_missed", e.slot, "firing", latest.UTC())
				passedBy[e] = s.passedOver(e.job, e.slot, latest)
				e.slot = latest.UTC()
			}
		}
		name := e.job.leaseName(e.slot)
		if leases[name] {
			s.retryLater(e, 0)
			continue
		}
		leases[name] = true
		claimed = append(claimed, e)
		items = append(items, e.job.claimParams(e.slot, s.cfg.Owner, s.liveKey, e.catchUp))
	}
	due = claimed
	sent := s.cfg.Clock.Now()
	results, err := s.claimBatch(ctx, items)
	if err != nil && ctx.Err() == nil && !s.isDown() && !errors.Is(err, errStoreTimeout) {
		// Once more at once before leaving the slots to catch-up: after a
		// database restart the first statement sent on a pooled connection
		// fails, and the pool hands out a fresh one. Safe even when the
		// first claim committed and only its answer was lost: the lease is
		// then this owner's, the retry is refused, and the interrupted-run
		// scan resumes the slot once that lease expires. Not after a store
		// that did not answer in time: that would only wait as long again.
		s.log.Warn("cronfence: a claim failed; trying once more", "error", err)
		results, err = s.claimBatch(ctx, items)
	}
	if err != nil {
		s.storeDown(err, due)
		return
	}
	s.storeUp()
	for i, r := range results {
		e := due[i]
		s.observeClaim(e.job.Name, e.slot, r, claimFire)
		s.resolveDeposed(ctx, e.job.Name, r)
		switch {
		case r.Claimed && e.catchUp:
			s.startRun(e.job, r, sent, true, catchUpLine(e.slot, r))
		case r.Claimed:
			s.startRun(e.job, r, sent, false, "")
		case r.Refusal == store.ClaimLeaseBusy:
			s.retryBusy(ctx, e, r.Lease)
		case r.Refusal == store.ClaimNotDue:
			// The slot fired a little early by the database clock (the
			// offset moved since it was last measured, or the measurement
			// is off by part of a round trip): try it again shortly.
			s.retryLater(e, 0)
		case r.Recorded == store.SlotSkipped:
			s.log.Info("cronfence: slot skipped: the previous run has not finished", "job", e.job.Name, "slot", e.slot,
				"holder", r.Lease.Owner, "generation", r.Lease.Generation)
		case r.Recorded == store.SlotBuffered:
			s.log.Info("cronfence: slot buffered until the current run ends", "job", e.job.Name, "slot", e.slot,
				"holder", r.Lease.Owner)
		default:
			s.log.Debug("cronfence: slot not claimed", "job", e.job.Name, "slot", e.slot, "reason", r.Refusal)
		}
	}
	var passed []store.SlotSkipParams
	for i, r := range results {
		if r.Refusal != store.ClaimPaused {
			passed = append(passed, passedBy[due[i]]...)
		}
	}
	s.recordSkips(ctx, passed)
}

// busyRetryEvery is how often a slot refused store.ClaimLeaseBusy is tried
// again.
const busyRetryEvery = 500 * time.Millisecond

// retryBusy tries a slot refused store.ClaimLeaseBusy again every
// busyRetryEvery, beside the other jobs' fires, while it is still its job's
// latest (a catch-up: while it is inside the job's catch-up window): a
// deposed writer, frozen or cut off inside its fenced transaction, still
// holds the lease, and the takeover must wait until that transaction ends,
// which the store no longer makes the whole batch do. Once a later slot is
// due, that one is fired instead (as after any stall, only the latest slot
// of a job is fired; the others are catch-up's).
func (s *Scheduler) retryBusy(ctx context.Context, e *entry, writer store.Lease) {
	now := s.scheduleNow()
	after := e.job.sched.Prev(now)
	passed := after.After(e.slot)
	if e.catchUp {
		after = e.slot.Add(e.job.CatchUpWindow)
		passed = now.After(after)
	}
	if passed {
		s.log.Warn("cronfence: slot given up: a deposed writer's transaction held its lease until a later slot was due (for a catch-up, until its window closed)",
			"job", e.job.Name, "slot", e.slot, "writer", writer.Owner, "generation", writer.Generation)
		s.recordSkips(ctx, []store.SlotSkipParams{s.givenUp(e, writer, after)})
		return
	}
	if !e.busy {
		s.log.Warn("cronfence: slot waits: a deposed writer (its lease expired) is still inside a transaction fenced under it; the takeover waits for it to end",
			"job", e.job.Name, "slot", e.slot, "writer", writer.Owner, "generation", writer.Generation)
		s.raiseDeposed(ctx, e, writer)
	}
	s.retryLater(&entry{job: e.job, slot: e.slot, busy: true, catchUp: e.catchUp}, busyRetryEvery)
}

// retryLater fires the entry's slot again after about wait (at least
// 20 ms, at most MaxSleep), without re-arming its job; a catch-up stays a
// catch-up.
func (s *Scheduler) retryLater(e *entry, wait time.Duration) {
	wait = min(max(wait+20*time.Millisecond, 20*time.Millisecond), s.cfg.MaxSleep)
	s.mu.Lock()
	heap.Push(&s.heap, &entry{job: e.job, slot: e.slot, fireAt: s.scheduleNow().Add(wait), retry: true, busy: e.busy, catchUp: e.catchUp})
	s.mu.Unlock()
}

// errStoreTimeout is the cause of a store round trip of the scheduler's
// that did not answer within Config.StoreTimeout.
var errStoreTimeout = errors.New("cronfence: the store did not answer within Config.StoreTimeout")

// bounded returns parent bounded by Config.StoreTimeout, for one store
// round trip the scheduler makes on its own: a database that accepts
// connections but does not answer must not hold the loop (or a scan, a
// prune) for good. The bound is real time, not the scheduler's Clock: it
// bounds how long a real database takes to answer, which no injected clock
// moves.
func (s *Scheduler) bounded(parent context.Context) (context.Context, func()) {
	return context.WithTimeoutCause(parent, s.cfg.StoreTimeout, errStoreTimeout)
}

// claimBatch is one bounded claim round trip. A claim the store did not
// answer in time fails with an error wrapping errStoreTimeout: the store
// counts as down (storeDown), as when it refuses connections.
func (s *Scheduler) claimBatch(ctx context.Context, items []store.SlotClaimParams) ([]store.SlotClaimResult, error) {
	bctx, cancel := s.bounded(ctx)
	defer cancel()
	results, err := s.store.SlotClaimBatch(bctx, items)
	if err != nil && context.Cause(bctx) == errStoreTimeout && ctx.Err() == nil {
		err = fmt.Errorf("%w (after %s): %w", errStoreTimeout, s.cfg.StoreTimeout, err)
	}
	return results, err
}
