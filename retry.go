package cronfence

import (
	"container/heap"
	"time"
)

// Retries: a slot whose attempt failed (its handler returned an error,
// panicked or timed out) is claimed again, attempt + 1, after the job's
// RetryBackoff, doubled for each retry before it, by the replica whose
// attempt failed. The store allows the claim of a failed slot while its
// attempts stay below the job's MaxAttempts, once per attempt however many
// replicas try. A retry is never made at or after the job's next slot: by
// then the slot's window has passed, and its next slot runs on time
// instead of behind a retry of the last one.

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

// retryFailed arms the retry of spec's slot, whose attempt just ended
// failed with the slot marked so: on the timer heap, due after the job's
// backoff. It does nothing for the slot's last attempt, nor when the retry
// would come at or after the job's next slot; either way the slot stays
// failed, and the log says why.
func (s *Scheduler) retryFailed(spec runSpec) {
	job := spec.job
	if spec.attempt >= job.MaxAttempts {
		s.log.Warn("cronfence: slot failed: its last attempt failed", "job", job.Name, "slot", spec.slot,
			"attempt", spec.attempt, "max_attempts", job.MaxAttempts)
		return
	}
	delay := retryDelay(job.RetryBackoff, spec.attempt)
	at := s.scheduleNow().Add(delay)
	if next := job.sched.Next(spec.slot); !next.IsZero() && !at.Before(next) {
		s.log.Warn("cronfence: slot failed: its retry would not start before the job's next slot", "job", job.Name,
			"slot", spec.slot, "attempt", spec.attempt, "retry_at", at, "next_slot", next)
		return
	}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	heap.Push(&s.heap, &entry{job: job, slot: spec.slot, fireAt: at, origin: OriginRetry, retry: true})
	s.mu.Unlock()
	s.poke()
	s.log.Info("cronfence: the failed attempt will be retried", "job", job.Name, "slot", spec.slot,
		"attempt", spec.attempt, "next_attempt", spec.attempt+1, "after", delay)
}

// retryOverdue reports whether a retry entry fires too late to be made:
// the job's next slot is due already (the loop stalled, the host slept).
func retryOverdue(e *entry, now time.Time) bool {
	next := e.job.sched.Next(e.slot)
	return e.origin == OriginRetry && !next.IsZero() && !now.Before(next)
}
