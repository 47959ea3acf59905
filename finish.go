package cronfence

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/cronfence/cronfence/internal/finishbatch"
	"github.com/cronfence/cronfence/internal/leasekeeper"
	"github.com/cronfence/cronfence/store"
)

// The last stage of the slot pipeline: a run's end is decided (completed,
// failed and retried, left to resume, not completed by its transaction)
// and recorded with the slot, the run row and the lease's release in one
// statement (Store.SlotFinish), the first attempt in a group commit with
// the other ends of the moment (finishbatch), retried while the lease
// is renewed until the store answers.

// finishTimeout is the longest bound of one attempt to record an end.
const finishTimeout = 10 * time.Second

// Recording a run's end: each attempt is bounded, and failed attempts are
// retried with a growing pause while the lease is renewed in between.
const (
	finishAttemptMin = time.Second   // the shortest bound of one attempt
	finishAttemptMax = finishTimeout // and the longest
	finishPauseFirst = 50 * time.Millisecond
	finishPauseMax   = 2 * time.Second
)

// errFinishAttemptTimeout is the cause of an attempt to record a run's end
// that the store did not answer in time.
var errFinishAttemptTimeout = finishbatch.ErrTimeout

// errNotCompleted is the error of a CompletesInTx job's run whose handler
// returned nil with its slot not completed by its transaction.
var errNotCompleted = errors.New("the handler returned success but did not complete its slot in its transaction (Job.CompletesInTx): its effect is not known to have committed")

// finisher decides and records the ends of runs.
type finisher struct {
	e *env
	// resume: a run cut short with attempts left leaves its slot running
	// (runPolicy.resume).
	resume  bool
	retries *retryPlanner        // plans and arms the retry of a failed attempt; nil: none
	batch   *finishbatch.Batcher // takes each end's first attempt; nil: each end alone
	stop    <-chan struct{}      // closed when the runs are cancelled (shutdown): retrying ends
	// watchOwn watches this replica's own run that left its slot running
	// or whose end was not recorded (peers.Peers.WatchOwn); nil: none.
	watchOwn func(job string, slot time.Time)
}

// runEnd is how a run ended.
type runEnd struct {
	outcome    RunOutcome
	err        error            // the handler's error, as the run row records it
	recorded   bool             // the store recorded the end
	recordErr  error            // why it could not, when not
	takenOver  bool             // the slot was taken over before the end was recorded
	slotStatus store.SlotStatus // the slot's status as the end left it
	buffered   time.Time        // the job's buffered slot that waited for this run
	lost       error            // the lease's loss while the handler ran; nil if it held
}

// finish ends spec's run, whose handler returned runErr at ended (by the
// database-corrected clock; zero: the store's clock stamps it). A run that
// held a lease keeps it renewed (hold) until its end is recorded.
func (f *finisher) finish(spec runSpec, hold *leasekeeper.Hold, runErr error, logs []string, ended time.Time) runEnd {
	e, job := f.e, spec.job
	row := store.Run{
		Manual: spec.origin == OriginManual, CatchUp: spec.origin == OriginCatchUp, Attempt: spec.attempt, Success: runErr == nil, Logs: logs,
		StartedAt: spec.lease.AcquiredAt,
	}
	if !ended.IsZero() {
		// When the handler returned, not when the end reaches the store
		// (under load seconds apart: a quick run would look slow); never
		// before its start, the clock's offset being measured.
		row.FinishedAt = latest(ended, spec.lease.AcquiredAt)
	}
	end := runEnd{outcome: RunSucceeded}
	if runErr != nil {
		row.Error = runErr.Error()
		end.outcome = RunFailed
	}
	if spec.origin == OriginFailOpen {
		end.recorded = f.recordFailOpen(spec, row)
		return end
	}
	p, retry := f.decide(spec, runErr, row)
	res, err := f.record(hold, job.LeaseTTL, p)
	end.slotStatus, end.buffered = res.SlotStatus, res.Buffered
	if !spec.slot.IsZero() && (err != nil || res.SlotStatus == store.SlotRunning) && f.watchOwn != nil {
		f.watchOwn(job.Name, spec.slot) // dead now, or once its lease expires: to resume
	}
	switch {
	case err != nil:
		e.Log.Error("cronfence: could not record the end of a run; its slot is resumed by another replica once its lease expires",
			"job", job.Name, "slot", spec.slot, "generation", spec.lease.Generation, "error", err)
		return runEnd{outcome: end.outcome, recordErr: err}
	case !res.SlotUpdated && p.Status == store.SlotRunning:
		return runEnd{outcome: RunInterrupted, recorded: true} // resumed already, as it was left to be
	case !spec.slot.IsZero() && !res.SlotUpdated:
		e.Log.Warn("cronfence: the slot was taken over before this run ended; its result was not recorded on the slot",
			"job", job.Name, "slot", spec.slot, "generation", spec.lease.Generation)
		// A failure whatever the handler returned: the run row says so too.
		end.outcome, end.takenOver, end.slotStatus = RunFailed, true, ""
		return end
	case p.NotCompleted(res.SlotStatus): // set only for a slot (a manual run has none)
		if runErr == nil {
			e.Log.Warn("cronfence: the handler returned success without completing its slot in its transaction; it is not counted as completed",
				"job", job.Name, "slot", spec.slot, "attempt", spec.attempt, "generation", spec.lease.Generation, "slot_status", res.SlotStatus)
		}
		end.recorded = true
		if res.SlotStatus == store.SlotRunning {
			// A slot buffered behind this one waits for its resumed run.
			end.outcome, end.buffered = RunInterrupted, time.Time{}
			return end
		}
		end.outcome = RunFailed
		return end
	}
	if runErr != nil && res.SlotStatus == store.SlotFailed && !spec.slot.IsZero() && f.retries != nil {
		f.retries.arm(spec, retry)
	}
	end.recorded = true
	return end
}

// decide is the end to record of spec's run, whose handler returned
// runErr, and the retry planned when it failed. Whether the handler's
// transaction completed its slot (Run.Complete, a command's complete()) is
// decided by the finish's one statement, on the database that holds the
// slot: no read before it, which after a failover may reach a server whose
// data no longer counts.
func (f *finisher) decide(spec runSpec, runErr error, row store.Run) (p store.SlotFinishParams, retry retryPlan) {
	job := spec.job
	p = store.SlotFinishParams{
		Job: job.Name, Slot: spec.slot, LeaseName: spec.lease.Name, Owner: spec.lease.Owner,
		Generation: spec.lease.Generation, Status: store.SlotCompleted, Run: row,
	}
	if runErr != nil {
		p.Status = store.SlotFailed
	}
	switch why := f.interruption(spec, runErr); {
	case why != "":
		// Cut short from outside with attempts left: the slot stays
		// running and the lease is released, so a live replica resumes it
		// at once; unless its transaction completed it.
		p.Status = store.SlotRunning
		p.NotCompletedError = "interrupted by " + why + ", left for a replica to resume: " + row.Error
	case runErr == nil && job.CompletesInTx && !spec.slot.IsZero():
		// A success counts only with its slot completed by the handler's
		// transaction; else the slot is left to resume, or on its last
		// attempt ends failed.
		p.NotCompletedError = errNotCompleted.Error()
		if spec.attempt < job.MaxAttempts {
			p.Status = store.SlotRunning
		} else {
			p.Status = store.SlotFailed
		}
	case runErr != nil && !spec.slot.IsZero() && f.retries != nil:
		// Failed: retried after the job's backoff while attempts remain,
		// and open to a retry by another replica until the next slot.
		retry = f.retries.plan(spec)
		p.RetryUntil = retry.until
	}
	return p, retry
}

// recordFailOpen records a run made without a lease, when the store is
// back.
func (f *finisher) recordFailOpen(spec runSpec, row store.Run) bool {
	e := f.e
	ctx, cancel := e.Bounded(context.Background())
	defer cancel()
	row.Job, row.Slot, row.Owner, row.StartedAt, row.FinishedAt = spec.job.Name, spec.slot, e.cfg.Owner, time.Time{}, time.Time{}
	const failed = "cronfence: could not record a run made without a lease"
	if _, err := e.Store.RunInsert(ctx, row); err != nil {
		e.WarnRepeated(failed, "job", spec.job.Name, "error", err)
		return false
	}
	e.Failures.Over(failed)
	return true
}

// interruption says why a run that ended in error was cut short from
// outside ("shutdown", "lease loss": the keeper found the lease lost, or
// the handler's fence did), or "" when it counts as failed: its handler
// failed or timed out, it was its slot's last attempt (a slot left running
// then would stay so), or the policy is not to resume.
func (f *finisher) interruption(spec runSpec, runErr error) string {
	if !f.resume || runErr == nil || spec.slot.IsZero() || spec.attempt >= spec.job.MaxAttempts {
		return ""
	}
	switch {
	case closed(f.stop):
		return "shutdown"
	case errors.Is(runErr, ErrLeaseLost):
		return "lease loss"
	}
	return ""
}

// record records the run's end and, should the store not answer (a
// database restart as the handler returned, a pool with thousands of
// finishes queued), tries again until it does: a finished run whose end is
// not recorded would otherwise be resumed, its work done a second time,
// once its lease expired. The lease (hold) stays renewed between attempts,
// so the run is never taken for dead while its owner lives; during an
// attempt renewals are held (Quiesce), so none overtakes the release. A
// retried attempt is safe when an earlier one committed but its answer was
// lost: the store writes one run row per holding. Each attempt is bounded
// by a third of the lease's TTL (1s to 10s); attempts and pauses are real
// time, the pace of a real database's recovery.
//
// Retrying stops only when the store refuses the call as invalid or closed,
// or when f.stop is closed: the process is going away, and its slot is then
// resumed like a dead owner's.
func (f *finisher) record(hold *leasekeeper.Hold, ttl time.Duration, p store.SlotFinishParams) (store.SlotFinishResult, error) {
	attempt := min(max(ttl/3, finishAttemptMin), finishAttemptMax)
	pause := finishPauseFirst
	for tries := 1; ; tries++ {
		hold.Quiesce()
		var res store.SlotFinishResult
		var err error
		if tries == 1 && f.batch != nil {
			res, err = f.batch.Finish(p, attempt)
		} else {
			// Real time: it bounds how long the database takes to answer.
			ctx, cancel := context.WithTimeoutCause(context.Background(), attempt, errFinishAttemptTimeout)
			res, err = f.e.Store.SlotFinish(ctx, p)
			cancel()
		}
		if err == nil {
			if tries > 1 {
				f.e.Log.Info("cronfence: the end of the run is recorded", "job", p.Job, "slot", p.Slot,
					"generation", p.Generation, "attempts", tries)
			}
			return res, nil
		}
		hold.Resume()
		if errors.Is(err, store.ErrInvalidArgument) || errors.Is(err, store.ErrClosed) || closed(f.stop) {
			return store.SlotFinishResult{}, err
		}
		if tries == 1 {
			f.e.Log.Warn("cronfence: could not record the end of the run; trying again while its lease is renewed",
				"job", p.Job, "slot", p.Slot, "generation", p.Generation, "error", err)
		}
		// Real time, as the bound: the pause is how long a real database
		// gets to recover, which no injected clock moves.
		timer := time.NewTimer(spread(pause))
		select {
		case <-timer.C:
		case <-f.stop:
			timer.Stop()
		}
		pause = min(2*pause, finishPauseMax)
	}
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// spread spreads d by ±20%, so thousands of runs retrying together after
// one outage do not hit the store in step.
func spread(d time.Duration) time.Duration {
	return d - d/5 + time.Duration(rand.Int64N(int64(d/5)*2+1))
}
