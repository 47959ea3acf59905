package cronfence

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cronfence/cronfence/store"
)

// Claims: every slot this replica means to run, whatever its origin (a
// timer, catch-up, resume, a buffered slot), is claimed here, in one
// bounded round trip per batch, and every answer is handled here once.

// fire claims every due entry in one round trip and starts the winners,
// then records the slots a stall passed over before the slots claimed
// (passOver), unless a claim found its job paused.
func (s *Scheduler) fire(ctx context.Context, due []*entry, now time.Time) {
	kept := due[:0]
	for _, e := range due {
		if retryOverdue(e, now) {
			s.log.Warn("cronfence: slot failed: its retry came due only after the job's next slot (the scheduler could not fire in time); not made",
				"job", e.job.Name, "slot", e.slot)
			continue
		}
		kept = append(kept, e)
	}
	due = kept
	// Taken out before the claims; recorded for the entries the store
	// answered (one it could not be reached for is left to catch-up,
	// outage.go).
	firstPassed := s.takePassedOver(due)
	// Ends before new claims: while this replica's runs' ends wait to be
	// recorded behind the batch in flight (a backlog, which only load
	// builds), it lets them go before it claims more, for at most
	// endsFirstMax. Each end recorded releases a job's lease, which its
	// next slot's claim would otherwise find held (an overlap: the slot
	// recorded buffered and claimed again once the end is in, two claims
	// for a run), and a claim sent beside them only slows them down.
	// Under overload (10,000 jobs a second, 3 replicas) the runs a second
	// rose by about an eighth and the slots started sooner
	// (docs/benchmarks.md, fourteenth pass).
	s.finishes.drain(ctx, endsFirstMax)
	claimed, results := s.claim(ctx, due)
	// Recorded after the claims, where no replica ran them, unless the job
	// is paused: a paused job's slots are not runs owed.
	var passed []store.SlotSkipParams
	for i, r := range results {
		e := claimed[i]
		if first, ok := firstPassed[e]; ok && r.Refusal != store.ClaimPaused {
			passed = append(passed, s.passedOverSlots(e.job, first, e.slot)...)
		}
	}
	s.recordPassedOver(passed)
}

// passOver moves each due timer entry whose loop woke too late for its
// slot (the host slept or starved, the process was stopped, the clock
// jumped) to its job's latest slot, and keeps the first slot passed over,
// so that the replica that claims the latest records the slots passed
// over (fire builds their skips, off s.mu: thousands of jobs stall at
// once). It runs before deferToPreferred, so the slot whose preferred
// replica claims at once is the slot claimed. (When it ran in fire, after
// the preference was judged on the slot passed over, every stalled
// replica claimed: the preferred replica of the passed slot the latest
// one at once, beside the latest's own preferred replica, and the
// fallbacks the passed slot, late; under overload, where every loop is a
// second behind, two claims in five were refused, and a passed slot a
// fallback won ran late and made the job's latest slot an overlap.) The
// caller holds s.mu.
func (s *Scheduler) passOver(due []*entry, now time.Time) {
	var stalled stall
	for _, e := range due {
		if e.retry {
			continue
		}
		if latest := e.job.sched.Prev(now); latest.After(e.slot) {
			stalled.add(e.job.Name, e.slot, latest.UTC())
			if s.passedOver == nil {
				s.passedOver = map[slotKey]time.Time{}
			}
			s.passedOver[keyOf(e.job.Name, latest)] = e.slot
			e.slot = latest.UTC()
		}
	}
	stalled.log(s.log)
}

// takePassedOver takes out of s.passedOver the first slot a stall passed
// over before each entry's slot, by entry.
func (s *Scheduler) takePassedOver(due []*entry) map[*entry]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.passedOver) == 0 {
		return nil
	}
	by := map[*entry]time.Time{}
	for _, e := range due {
		key := keyOf(e.job.Name, e.slot)
		if first, ok := s.passedOver[key]; ok {
			by[e] = first
			delete(s.passedOver, key)
		}
	}
	return by
}

// stall gathers the jobs a pass found slots passed over for, to say so in
// one line: a replica that fell behind with thousands of jobs wrote a line
// per job, and the lines cost it more of the CPU it was short of.
type stall struct {
	jobs                int
	firstJob            string
	firstMissed, firing time.Time
}

func (st *stall) add(job string, missed, firing time.Time) {
	if st.jobs == 0 {
		st.firstJob, st.firstMissed, st.firing = job, missed, firing
	}
	st.jobs++
	if missed.Before(st.firstMissed) {
		st.firstMissed = missed
	}
	st.firing = latest(st.firing, firing)
}

func (st *stall) log(l *slog.Logger) {
	if st.jobs == 0 {
		return
	}
	l.Warn("cronfence: slots passed while the scheduler could not fire", "job", st.firstJob, "jobs", st.jobs,
		"first_missed", st.firstMissed, "firing", st.firing)
}

// claim claims the entries' slots in bounded round trips and handles
// every answer (claimed). It returns the entries it sent and the store's
// answers, in the same order; none for those the store could not be
// reached for, which storeDown handles.
func (s *Scheduler) claim(ctx context.Context, batch []*entry) ([]*entry, []store.SlotClaimResult) {
	// One claim per lease in a statement: when two slots of a job are due
	// together (a fallback whose preferred replica's claim was not heard
	// yet, and the job's next slot), the earlier goes first and the later
	// in the next round trip, at once. (It used to wait for the next pass,
	// 20 ms later; behind a fallback that was only refused, that delayed
	// the job's own slot, and where notices lagged, slot after slot.)
	//
	// Among a slot's items, in job name order, on every replica and at
	// every slot: a batch of thousands goes in several statements, one
	// after the other, and a job claimed in the last of them at one slot
	// is claimed in the last of them at its next, wherever its preferred
	// replica is, so each job's run has about its period to end before
	// the next slot's claim judges whether it still runs. (In the timers'
	// order, which is no order among entries due together, a job whose run
	// started 0.7 s late was as likely claimed first at its next slot, and
	// found its run's end not yet recorded: an overlap, skipped or
	// buffered. At 10,000 jobs a second on 3 replicas, 82–291 slots a
	// minute; docs/benchmarks.md, fifteenth pass.) Under load the jobs
	// late in the order start later, slot after slot.
	slices.SortStableFunc(batch, func(a, b *entry) int {
		if c := a.slot.Compare(b.slot); c != 0 {
			return c
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
		claimed, results, unsent, err := s.claimRound(ctx, round)
		claimedAll, resultsAll = append(claimedAll, claimed...), append(resultsAll, results...)
		if err != nil {
			if ctx.Err() == nil { // else stopping: the slots are left to the other replicas, or to catch-up
				s.storeDown(err, append(unsent, later...)) // the chunk that failed, the ones after it, the rounds to come
			}
			break
		}
		batch = later
	}
	return claimedAll, resultsAll
}

// claimRound claims a round of entries, no lease twice, in statements of
// at most maxClaimBatch items. When the store cannot be reached it returns
// the error and the entries not claimed: the chunk that failed and the
// ones after it.
func (s *Scheduler) claimRound(ctx context.Context, round []*entry) (claimed []*entry, results []store.SlotClaimResult, unsent []*entry, err error) {
	items := make([]store.SlotClaimParams, len(round))
	for i, e := range round {
		items[i] = e.job.claimParams(e.slot, s.cfg.Owner, s.liveKey, e.origin, int(e.attempt))
		items[i].WaitDue = s.claimLead > 0
	}
	for sent := 0; sent < len(round); {
		n := min(len(round)-sent, maxClaimBatch)
		r, err := s.claimChunk(ctx, round[sent:sent+n], items[sent:sent+n])
		if err != nil {
			return claimed, results, slices.Clone(round[sent:]), err
		}
		claimed, results = append(claimed, round[sent:sent+n]...), append(results, r...)
		sent += n
	}
	return claimed, results, nil, nil
}

// endsFirstMax bounds how long a pass's claims wait for the ends queued
// before them (see fire): the wait is for a backlog under load, not for a
// store that stopped answering, which the ends' own bounds deal with.
const endsFirstMax = time.Second

// maxClaimBatch bounds one claim statement: a batch of thousands of slots
// due at one instant goes in statements of at most this many items, so none
// takes seconds (and StoreTimeout bounds each, not the whole batch).
const maxClaimBatch = 1000

// claimChunk is one claim round trip for sent's items, each answer
// handled (claimed), or the error that kept the store from answering.
func (s *Scheduler) claimChunk(ctx context.Context, sent []*entry, items []store.SlotClaimParams) ([]store.SlotClaimResult, error) {
	at := s.cfg.Clock.Now()
	results, err := s.claimBatch(ctx, items)
	answered := time.Now() // a winner's Wait counts from here, on the monotonic clock
	if err != nil && ctx.Err() == nil && !s.isDown() && !errors.Is(err, errStoreTimeout) {
		// Once more at once before counting the store as down: after a
		// database restart the first statement sent on a pooled connection
		// fails, and the pool hands out a fresh one. Safe even when the
		// first claim committed and only its answer was lost: the lease is
		// then this owner's, the retry is refused, and the interrupted-run
		// scan resumes the slot once that lease expires. Not after a store
		// that did not answer in time: that would only wait as long again.
		s.log.Warn("cronfence: a claim failed; trying once more", "error", err)
		results, err = s.claimBatch(ctx, items)
		answered = time.Now()
	}
	if err != nil {
		return nil, err
	}
	s.storeUp()
	for i, r := range results {
		s.claimed(ctx, sent[i], r, at, answered)
	}
	return results, nil
}

// claimed handles the store's answer r to the claim of e's slot, sent at
// sent and answered at answered (real time): a winner starts, once its
// slot is due if the store committed the claim ahead of it
// (store.SlotClaimResult.Wait); a refusal is retried, given up or logged.
func (s *Scheduler) claimed(ctx context.Context, e *entry, r store.SlotClaimResult, sent, answered time.Time) {
	s.observeClaim(e, r)
	s.resolveDeposed(ctx, e.job.Name, r)
	if e.origin == OriginRetry && !r.Claimed {
		s.mu.Lock()
		s.giveUpRetry(e, r)
		s.mu.Unlock()
	}
	switch {
	case r.Claimed:
		spec := runSpec{job: e.job, slot: r.Slot.Slot, lease: r.Lease, attempt: r.Slot.Attempts, origin: e.origin, sent: sent}
		if r.Wait > 0 {
			spec.startAt = answered.Add(r.Wait)
		}
		s.start(spec)
	case r.Refusal == store.ClaimLeaseBusy && e.origin.onTimer():
		s.retryBusy(ctx, e, r.Lease)
	case r.Refusal == store.ClaimNotDue && e.origin.onTimer():
		// The slot fired early by the database clock, by more than the
		// store waits for (store.MaxClaimWait), or on a clock that sends
		// no claim ahead: the offset (offset.go) moved since it was
		// measured (this clock drifted or was stepped). Try it again
		// shortly.
		s.retryLater(e, 0)
	case r.Refusal == store.ClaimPaused && r.Recorded == store.SlotSkipped:
		// Once across replicas: only the claim that settled the slot
		// recorded it.
		s.log.Info("cronfence: slot skipped: the job is paused", "job", e.job.Name, "slot", e.slot)
	case r.Recorded == store.SlotSkipped:
		s.log.Info("cronfence: slot skipped: the previous run has not finished", "job", e.job.Name, "slot", e.slot,
			"holder", r.Lease.Owner, "generation", r.Lease.Generation)
	case e.origin == OriginRetry && r.Refusal == store.ClaimHeld && r.Slot.Status == store.SlotFailed:
		s.log.Warn("cronfence: a retry found the job's lease held by another run (a manual run); a scan tries it again while its window is open",
			"job", e.job.Name, "slot", e.slot, "holder", r.Lease.Owner, "generation", r.Lease.Generation)
	case r.Recorded == store.SlotBuffered:
		s.log.Info("cronfence: slot buffered until the current run ends", "job", e.job.Name, "slot", e.slot,
			"holder", r.Lease.Owner)
	default:
		// Claimed elsewhere, completed, paused; or, for a resume or a
		// buffered slot, a lease still busy: the next resume scan (or the
		// job's next run, catch-up) tries again.
		s.log.Debug("cronfence: slot not claimed", "job", e.job.Name, "slot", e.slot, "origin", e.origin, "reason", r.Refusal)
	}
}

// runBuffered claims and starts the slot that waited for the run that just
// ended (overlap policy buffer-one, or a late claim). The slots handed over
// while a claim of them is in flight wait for it and go together in the
// next (the caller that found none in flight claims until the queue is
// empty): a replica whose runs end by the thousand, late, under load,
// claims their buffered slots in a few statements rather than one each.
// One slot alone is claimed at once, as before.
func (s *Scheduler) runBuffered(job *registered, slot time.Time) {
	q := &s.buffered
	q.mu.Lock()
	q.queue = append(q.queue, &entry{job: job, slot: slot, origin: OriginBuffered})
	lead := !q.claiming
	q.claiming = true
	q.mu.Unlock()
	if !lead {
		return // the claim in flight is followed by one with this slot
	}
	for {
		s.mu.Lock()
		stopped := s.stopped
		s.mu.Unlock()
		q.mu.Lock()
		batch := q.queue
		q.queue = nil
		if len(batch) == 0 || stopped {
			// Stopped: left buffered, for catch-up or the job's next run.
			q.claiming = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		s.claim(context.Background(), batch)
	}
}

// bufferedQueue is the buffered slots handed over and not yet claimed
// (runBuffered).
type bufferedQueue struct {
	mu       sync.Mutex
	queue    []*entry
	claiming bool // a caller is claiming the queue
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
	if e.origin == OriginCatchUp {
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
	s.retryLater(&entry{job: e.job, slot: e.slot, origin: e.origin, attempt: e.attempt, busy: true}, busyRetryEvery)
}

// retryLater fires the entry's slot again after about wait (at least
// 20 ms, at most MaxSleep), without re-arming its job; it keeps its origin.
func (s *Scheduler) retryLater(e *entry, wait time.Duration) {
	wait = min(max(wait+20*time.Millisecond, 20*time.Millisecond), s.cfg.MaxSleep)
	s.mu.Lock()
	heap.Push(&s.heap, &entry{job: e.job, slot: e.slot, fireAt: s.scheduleNow().Add(wait), origin: e.origin, attempt: e.attempt, retry: true, busy: e.busy})
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
	return results, s.timedOut(ctx, bctx, err)
}

// timedOut is err, from a store call bounded by bctx (bounded's, under
// ctx), wrapping errStoreTimeout when that bound ended the call and ctx
// did not.
func (s *Scheduler) timedOut(ctx, bctx context.Context, err error) error {
	if err != nil && context.Cause(bctx) == errStoreTimeout && ctx.Err() == nil {
		return fmt.Errorf("%w (after %s): %w", errStoreTimeout, s.cfg.StoreTimeout, err)
	}
	return err
}
