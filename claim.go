package cronfence

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cronfence/cronfence/internal/monitor"
	"github.com/cronfence/cronfence/internal/service"
	"github.com/cronfence/cronfence/store"
)

// The second stage of the slot pipeline: every slot this replica means to
// run, whatever its origin (a timer, catch-up, a resume, a retry, a
// buffered slot), is claimed here in bounded round trips, and every answer
// is handled here once: a winner goes on to the runner, a refusal is fired
// again, given up, recorded or logged.

// maxClaimBatch bounds one claim statement: thousands of slots due at one
// instant go in statements of at most this many items, each bounded by
// StoreTimeout.
const maxClaimBatch = 1000

// endsFirstMax bounds how long a fire waits for this replica's runs' ends
// queued before it (see fire).
const endsFirstMax = time.Second

// deposedWaitEvery is how often a slot refused store.ClaimLeaseBusy is tried
// again.
const deposedWaitEvery = 500 * time.Millisecond

// claimer claims slots and handles the answers. Later stages reach it
// through runBuffered; it hands back to the timers only through refire.
type claimer struct {
	e       *env
	jobs    *jobSet
	skips   *skipRecorder
	alerts  *monitor.Alerter
	retries *retryPlanner

	refire    func(e *entry, wait time.Duration) // the timers: fire e again after wait
	start     func(runSpec)                      // the runner
	endsFirst func(ctx context.Context, limit time.Duration)
	// backfilled handles the answer to a backfill's claim
	// (backfiller.claimed); nil: none.
	backfilled func(e *entry, r store.SlotClaimResult)
	// beforeCatchUp records the dead attempts among a catch-up's slots
	// (resumer.recordDeadAmong).
	beforeCatchUp func(ctx context.Context, batch []*entry)
	wake          func()      // the loop: the store is back, catch up now
	stopped       func() bool // the scheduler stops: buffered slots are left

	mu          sync.Mutex
	outage      outage
	buffered    bufferedQueue
	catchUps    catchUpQueues
	pauseUnread atomic.Bool // the last claim could not read the pause overrides
}

// fire claims the due timer entries and records the slots a stall passed
// over before each one claimed (firstPassed), unless a claim found its job
// paused: a paused job's slots are not runs owed. An entry whose slot is
// excluded is recorded skipped instead of claimed.
func (c *claimer) fire(ctx context.Context, due []*entry, firstPassed map[*entry]time.Time, now time.Time) {
	kept := due[:0]
	var passed []store.SlotSkipParams
	for _, e := range due {
		if entry, ok := e.job.excluded(e.slot); ok && (e.origin == OriginScheduled || e.origin == OriginCatchUp) {
			// Recorded, not claimed; and so are the slots a stall passed
			// over before it. Only a slot's own fire: a retry's slot ran
			// (an exclusion added since does not take back the retry it
			// is owed, and SlotSkip, which writes only a slot without a
			// row, would drop it unrecorded), and a backfill judges
			// exclusions itself.
			if first, ok := firstPassed[e]; ok {
				passed = append(passed, passedOverSlots(c.e.cfg.Owner, e.job, first, e.slot)...)
			}
			passed = append(passed, excludedSkip(c.e.cfg.Owner, e, entry))
			continue
		}
		if retryOverdue(e, now) {
			c.e.Log.Warn("cronfence: slot failed: its retry came due only after the job's next slot (the scheduler could not fire in time); not made",
				"job", e.job.Name, "slot", e.slot)
			continue
		}
		kept = append(kept, e)
	}
	// Ends before new claims: while this replica's runs' ends wait behind
	// the batch in flight (a backlog, which only load builds), they go
	// first, for at most endsFirstMax. Each releases a lease that its
	// job's next claim would otherwise find held (an overlap).
	c.endsFirst(ctx, endsFirstMax)
	claimed, results := c.claim(ctx, kept)
	for i, r := range results {
		e := claimed[i]
		if first, ok := firstPassed[e]; ok && r.Refusal != store.ClaimPaused {
			passed = append(passed, passedOverSlots(c.e.cfg.Owner, e.job, first, e.slot)...)
		}
	}
	c.skips.recordLater(passed)
}

// claim claims the entries' slots in bounded round trips and handles
// every answer. It returns the entries sent and the store's answers, in
// the same order; none for those the store could not be reached for,
// which storeDown handles.
//
// One claim per lease goes in a statement: two slots of one job go in
// consecutive rounds, the earlier first. An answer that settles a slot of
// a catch-up of policy all adds the job's next slot to the next round. A slot's jobs go in name order on
// every replica and at every slot, so a job claimed in a large batch's
// last statement at one slot is claimed in the last at its next too, and
// its run has its period to end before that claim judges whether it still
// runs (in no order, a job whose run started late was as likely claimed
// first at its next slot, and found overlapping).
func (c *claimer) claim(ctx context.Context, batch []*entry) ([]*entry, []store.SlotClaimResult) {
	slices.SortStableFunc(batch, func(a, b *entry) int {
		if o := a.slot.Compare(b.slot); o != 0 {
			return o
		}
		return strings.Compare(a.job.Name, b.job.Name)
	})
	var claimedAll []*entry
	var resultsAll []store.SlotClaimResult
	for len(batch) > 0 {
		var round, later []*entry
		leases := make(map[string]bool, len(batch))
		for _, e := range batch {
			if name := e.job.leaseName(e.slot); !leases[name] {
				leases[name] = true
				round = append(round, e)
			} else {
				later = append(later, e)
			}
		}
		claimed, results, next, unsent, err := c.claimRound(ctx, round)
		claimedAll, resultsAll = append(claimedAll, claimed...), append(resultsAll, results...)
		if err != nil {
			if ctx.Err() == nil { // else stopping: the slots are left to the others, or to catch-up
				c.storeDown(err, append(unsent, later...))
			}
			break
		}
		batch = append(later, next...)
	}
	return claimedAll, resultsAll
}

// claimRound claims a round of entries, no lease twice, in statements of
// at most maxClaimBatch items, and returns the entries the answers made
// due next. When the store cannot be reached it returns the error and the
// entries not claimed.
func (c *claimer) claimRound(ctx context.Context, round []*entry) (claimed []*entry, results []store.SlotClaimResult, next, unsent []*entry, err error) {
	items := make([]store.SlotClaimParams, len(round))
	for i, e := range round {
		items[i] = e.job.claimParams(e.slot, c.e.cfg.Owner, c.e.LiveKey.Load(), e.origin, int(e.attempt))
		items[i].WaitDue = c.e.claimLead > 0
	}
	for sent := 0; sent < len(round); {
		n := min(len(round)-sent, maxClaimBatch)
		r, more, err := c.claimChunk(ctx, round[sent:sent+n], items[sent:sent+n])
		if err != nil {
			return claimed, results, next, slices.Clone(round[sent:]), err
		}
		claimed, results, next = append(claimed, round[sent:sent+n]...), append(results, r...), append(next, more...)
		sent += n
	}
	return claimed, results, next, nil, nil
}

// claimChunk is one claim round trip for sent's items, each answer
// handled, with the entries the answers made due next, or the error that
// kept the store from answering.
func (c *claimer) claimChunk(ctx context.Context, sent []*entry, items []store.SlotClaimParams) ([]store.SlotClaimResult, []*entry, error) {
	at := c.e.cfg.Clock.Now()
	results, err := c.claimBatch(ctx, items)
	answered := time.Now() // a winner's Wait counts from here, on the monotonic clock
	if err != nil && ctx.Err() == nil && !c.isDown() && !errors.Is(err, service.ErrStoreTimeout) {
		// Once more before counting the store as down: after a database
		// restart the first statement on a pooled connection fails. Safe
		// when the first committed and only its answer was lost: the
		// retry is refused, and the lease's expiry leads to a resume. Not
		// after a store that did not answer in time: it would only wait
		// as long again.
		c.e.Log.Warn("cronfence: a claim failed; trying once more", "error", err)
		results, err = c.claimBatch(ctx, items)
		answered = time.Now()
	}
	if err != nil {
		return nil, nil, err
	}
	c.storeUp()
	var next []*entry
	for i, r := range results {
		if e := c.handle(ctx, sent[i], r, at, answered); e != nil {
			next = append(next, e)
		}
	}
	return results, next, nil
}

// claimBatch is one claim round trip bounded by StoreTimeout: a claim the
// store did not answer in time fails wrapping service.ErrStoreTimeout, and the
// store counts as down, as when it refuses connections.
func (c *claimer) claimBatch(ctx context.Context, items []store.SlotClaimParams) ([]store.SlotClaimResult, error) {
	bctx, cancel := c.e.Bounded(ctx)
	defer cancel()
	results, err := c.e.Store.SlotClaimBatch(bctx, items)
	return results, c.e.TimedOut(ctx, bctx, err)
}

// handle handles the store's answer r to the claim of e's slot, sent at
// sent (the replica's clock) and answered at answered (real time): a
// winner starts, once its slot is due if the store committed the claim
// ahead of it (store.SlotClaimResult.Wait); a refusal is fired again,
// given up, recorded or logged. It returns the entry to claim next, for a
// catch-up of policy all whose slot the answer settled.
func (c *claimer) handle(ctx context.Context, e *entry, r store.SlotClaimResult, sent, answered time.Time) *entry {
	c.observe(e, r)
	c.alerts.ResolveDeposed(ctx, e.job.Name, r)
	if e.origin == OriginRetry && !r.Claimed {
		c.retries.giveUp(e, r)
	}
	waiting := false
	log := c.e.Log
	switch {
	case r.Claimed:
		spec := runSpec{job: e.job, slot: r.Slot.Slot, lease: r.Lease, attempt: r.Slot.Attempts, origin: e.origin, sent: sent}
		if r.Wait > 0 {
			spec.startAt = answered.Add(r.Wait)
		}
		c.start(spec)
	case r.Refusal == store.ClaimLeaseBusy && e.origin.onTimer():
		waiting = c.waitForDeposed(ctx, e, r.Lease)
	case r.Refusal == store.ClaimNotDue && e.origin.onTimer():
		// Early by the database clock, by more than the store waits for:
		// the offset moved since it was measured. Again shortly.
		c.refire(e, 0)
	case r.Refusal == store.ClaimPaused && r.Recorded == store.SlotSkipped:
		// Once across replicas: only the claim that settled it records it.
		log.Info("cronfence: slot skipped: the job is paused", "job", e.job.Name, "slot", e.slot)
	case r.Recorded == store.SlotSkipped:
		log.Info("cronfence: slot skipped: the previous run has not finished", "job", e.job.Name, "slot", e.slot,
			"holder", r.Lease.Owner, "generation", r.Lease.Generation)
	case e.origin == OriginRetry && r.Refusal == store.ClaimHeld && r.Slot.Status == store.SlotFailed:
		log.Warn("cronfence: a retry found the job's lease held by another run (a manual run); a scan tries it again while its window is open",
			"job", e.job.Name, "slot", e.slot, "holder", r.Lease.Owner, "generation", r.Lease.Generation)
	case r.Recorded == store.SlotBuffered:
		log.Info("cronfence: slot buffered until the current run ends", "job", e.job.Name, "slot", e.slot,
			"holder", r.Lease.Owner)
	default:
		// Claimed elsewhere, completed, paused; or, for a resume or a
		// buffered slot, a lease still busy: the next scan (or the job's
		// next run, catch-up) tries again.
		log.Debug("cronfence: slot not claimed", "job", e.job.Name, "slot", e.slot, "origin", e.origin, "reason", r.Refusal)
	}
	if e.origin == OriginCatchUp && e.job.CatchUp == CatchUpAll {
		return c.catchUpAnswered(e, r, waiting)
	}
	if e.origin == OriginBackfill && c.backfilled != nil {
		c.backfilled(e, r)
	}
	return nil
}

// observe reports the answer to the Observer and, when this replica
// recorded the slot as skipped, the skip.
func (c *claimer) observe(e *entry, r store.SlotClaimResult) {
	c.notePauseState(r.PauseStateUnread)
	if c.e.cfg.Observer == nil {
		return
	}
	c.e.observe(ClaimEvent{Job: e.job.Name, Slot: e.slot, Owner: c.e.cfg.Owner, Won: r.Claimed, Refusal: r.Refusal, Recorded: r.Recorded, Origin: e.origin})
	if r.Recorded == store.SlotSkipped {
		reason := r.SkipRun.Reason
		if reason == "" {
			reason = string(r.Refusal)
		}
		c.e.observe(SkipEvent{Job: e.job.Name, Slot: e.slot, Owner: c.e.cfg.Owner, Reason: reason, Holder: r.Lease.Owner, Origin: e.origin})
	}
}

// notePauseState warns, once, when a claim found the pause overrides
// unreadable, and says, once, when they read again. Meanwhile every job
// runs on its declared enabled value: a broken pause table fails open
// rather than stopping every job.
func (c *claimer) notePauseState(unread bool) {
	if unread == c.pauseUnread.Load() || c.pauseUnread.Swap(unread) == unread {
		return
	}
	if unread {
		c.e.Log.Warn("cronfence: the pause overrides cannot be read (the job_state table is missing or damaged); jobs run on their declared enabled value until it reads again")
		return
	}
	c.e.Log.Info("cronfence: the pause overrides read again; they decide again")
}

// waitForDeposed claims a slot refused store.ClaimLeaseBusy again every
// deposedWaitEvery while it is still its job's latest (a catch-up: while
// inside its window): a deposed writer, frozen or cut off inside its
// fenced transaction, still holds the lease, and the takeover waits until
// that transaction ends. Once a later slot is due, the slot is given up
// and recorded skipped. It reports whether the slot waits.
func (c *claimer) waitForDeposed(ctx context.Context, e *entry, writer store.Lease) bool {
	now := c.e.Now()
	after := e.job.sched.Prev(now)
	passed := after.After(e.slot)
	if e.origin == OriginCatchUp {
		after = e.slot.Add(e.job.CatchUpWindow)
		passed = now.After(after)
	}
	if passed {
		c.e.Log.Warn("cronfence: slot given up: a deposed writer's transaction held its lease until a later slot was due (for a catch-up, until its window closed)",
			"job", e.job.Name, "slot", e.slot, "writer", writer.Owner, "generation", writer.Generation)
		c.skips.record(ctx, []store.SlotSkipParams{givenUp(c.e.cfg.Owner, e, writer, after)})
		return false
	}
	if !e.deposed {
		c.e.Log.Warn("cronfence: slot waits: a deposed writer (its lease expired) is still inside a transaction fenced under it; the takeover waits for it to end",
			"job", e.job.Name, "slot", e.slot, "writer", writer.Owner, "generation", writer.Generation)
		c.alerts.RaiseDeposed(ctx, e.job.Name, e.slot, writer)
	}
	c.refire(&entry{job: e.job, slot: e.slot, origin: e.origin, attempt: e.attempt, deposed: true}, deposedWaitEvery)
	return true
}

// bufferedQueue is the buffered slots handed over and not yet claimed.
type bufferedQueue struct {
	mu       sync.Mutex
	queue    []*entry
	claiming bool // a caller is claiming the queue
}

// runBuffered claims and starts the slot that waited for the run that just
// ended (buffer-one, or a claim that came after that run took the lease).
// Slots handed over while a claim of them is in flight go together in the
// next: runs ending by the thousand under load have their buffered slots
// claimed in a few statements rather than one each.
func (c *claimer) runBuffered(job *registered, slot time.Time) {
	q := &c.buffered
	q.mu.Lock()
	q.queue = append(q.queue, &entry{job: job, slot: slot, origin: OriginBuffered})
	lead := !q.claiming
	q.claiming = true
	q.mu.Unlock()
	if !lead {
		return // the claim in flight is followed by one with this slot
	}
	for {
		q.mu.Lock()
		batch := q.queue
		q.queue = nil
		if len(batch) == 0 || c.stopped() {
			// Stopped: left buffered, for catch-up or the job's next run.
			q.claiming = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		c.claim(context.Background(), batch)
	}
}
