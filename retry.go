package cronfence

import (
	"sync"
	"time"

	"github.com/cronfence/cronfence/store"
)

// Retries: a slot whose attempt failed (its handler returned an error,
// panicked or timed out) is claimed again, attempt + 1, after the job's
// RetryBackoff, doubled for each retry before it, by the replica whose
// attempt failed, by its own timer. The store allows the claim of a failed
// slot by a retry (store.SlotClaimParams.RetryFailed) while its attempts
// stay below the job's MaxAttempts, once per attempt however many replicas
// try, and keeps the slot open to a retry until the job's next slot
// (store.SlotFinishParams.RetryUntil): should the replica whose attempt
// failed stop or die during the backoff, another finds the slot in its
// scan for interrupted runs and retries it once due (retryDue). A retry is
// never made at or after the job's next slot: by then the slot's window
// has passed, and its next slot runs on time instead of behind a retry of
// the last one.

// retryDelay is how long after the failure of attempt (1 for a slot's
// first) the next attempt starts: first, doubled for each attempt before
// this one, saturating rather than overflowing.
func retryDelay(first time.Duration, attempt int) time.Duration {
	d := first
	for i := 1; i < attempt && d < time.Duration(1<<62); i++ {
		d *= 2
	}
	return d
}

// retryPlan is when a failed attempt is retried: at, on the schedule
// clock, after the job's backoff, and before until, the job's next slot.
// why says why there is no retry (at zero): the slot's last attempt, or a
// retry that would come at or after the next slot.
type retryPlan struct {
	at, until time.Time
	why       string
}

// retryPlanner plans the retries of failed attempts and arms them on the
// timers (through rearm), and remembers the retries refused for good.
type retryPlanner struct {
	e     *env
	rearm func(*entry) // the timers: put a retry on the heap and wake the loop

	mu      sync.Mutex
	givenUp map[retryKey]time.Time // retries refused for good, until their slot's window closes
}

// plan plans the retry of spec's attempt, which failed just now.
func (p *retryPlanner) plan(spec runSpec) retryPlan {
	job := spec.job
	if spec.attempt >= job.MaxAttempts {
		return retryPlan{why: "its last attempt failed"}
	}
	at := p.e.Now().Add(retryDelay(job.RetryBackoff, spec.attempt))
	until := retryWindowEnd(job, spec.slot)
	if !at.Before(until) {
		return retryPlan{why: "its retry would not start before the job's next slot"}
	}
	return retryPlan{at: at, until: until}
}

// retryGrace is how long after its slot a job with no later slot may
// still retry it.
const retryGrace = time.Hour

// retryWindowEnd is when a retry of the job's slot may no longer start:
// the job's next slot, or retryGrace after the slot for a schedule that
// has none. Every judge of a retry's lateness (its plan, its timer, a
// scan, a refusal remembered) goes by it.
func retryWindowEnd(job *registered, slot time.Time) time.Time {
	if next := job.sched.Next(slot); !next.IsZero() {
		return next
	}
	return slot.Add(retryGrace)
}

// arm arms the retry of spec's slot, whose attempt just ended failed
// with the slot marked so (and, in the store, open to a retry until
// plan.until: another replica retries it should this one stop first), on
// the timer heap. Without a retry, the log says why the slot ends failed.
func (p *retryPlanner) arm(spec runSpec, plan retryPlan) {
	job := spec.job
	if plan.at.IsZero() {
		p.e.Log.Warn("cronfence: slot failed: "+plan.why, "job", job.Name, "slot", spec.slot,
			"attempt", spec.attempt, "max_attempts", job.MaxAttempts)
		return
	}
	p.rearm(&entry{job: job, slot: spec.slot, fireAt: plan.at, origin: OriginRetry, attempt: int32(spec.attempt), again: true})
	p.e.Log.Info("cronfence: the failed attempt will be retried", "job", job.Name, "slot", spec.slot,
		"attempt", spec.attempt, "next_attempt", spec.attempt+1, "at", plan.at)
}

// retryDue reports whether a failed slot that a scan found open to a retry
// is to be retried now by whoever scanned it: its backoff from its end has
// passed, and its window has not closed. The replica whose attempt failed
// retries it on time by its own timer; a scan is for when that one is
// gone.
func retryDue(job *registered, sl store.Slot, now time.Time) bool {
	if sl.Attempts >= job.MaxAttempts || sl.FinishedAt.IsZero() {
		return false
	}
	return !now.Before(sl.FinishedAt.Add(retryDelay(job.RetryBackoff, sl.Attempts))) && now.Before(retryWindowEnd(job, sl.Slot))
}

// retryOverdue reports whether a retry entry fires too late to be made:
// its window closed (the loop stalled, the host slept).
func retryOverdue(e *entry, now time.Time) bool {
	return e.origin == OriginRetry && !now.Before(retryWindowEnd(e.job, e.slot))
}

// retryKey names the retry of one failed attempt of one slot.
type retryKey struct {
	job     string
	slot    int64 // UnixNano
	attempt int
}

// giveUp remembers, until its window closes, that a retry of e's
// slot was refused for a reason a later try would not change (the job is
// paused, the attempt was retried by another replica already, no attempt
// is left): the slot stays open to a retry in the store until then, and
// every scan would otherwise claim it again, to be refused again. A
// refusal because the lease is held (a manual run) is not remembered: the
// next scan tries again. For an OriginRetry entry refused.
func (p *retryPlanner) giveUp(e *entry, r store.SlotClaimResult) {
	if r.Refusal == store.ClaimHeld || r.Refusal == store.ClaimLeaseBusy {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.givenUp == nil {
		p.givenUp = map[retryKey]time.Time{}
	}
	p.givenUp[retryKey{e.job.Name, e.slot.UnixNano(), int(e.attempt)}] = retryWindowEnd(e.job, e.slot)
}

// forgetClosed forgets the given-up retries whose window closed by now.
// Once a scan.
func (p *retryPlanner) forgetClosed(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, until := range p.givenUp {
		if !now.Before(until) {
			delete(p.givenUp, k)
		}
	}
}

// isGivenUp reports whether the retry of sl's last attempt was given up.
func (p *retryPlanner) isGivenUp(sl store.Slot) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.givenUp[retryKey{sl.Job, sl.Slot.UnixNano(), sl.Attempts}]
	return ok
}
