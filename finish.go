package cronfence

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/cronfence/cronfence/internal/leasekeeper"
	"github.com/cronfence/cronfence/store"
)

// finishTimeout is the longest bound of one attempt of endRecorder (and of
// LockSlot's read of a failed run's slot).
const finishTimeout = 10 * time.Second

// Recording a run's end: each attempt is bounded, and failed attempts are
// retried with a growing pause while the lease is renewed in between.
const (
	finishAttemptMin = time.Second   // the shortest bound of one attempt
	finishAttemptMax = finishTimeout // and the longest
	finishRetryFirst = 50 * time.Millisecond
	finishRetryMax   = 2 * time.Second
)

// errFinishAttemptTimeout is the cause of an attempt to record a run's end
// that the store did not answer in time.
var errFinishAttemptTimeout = errors.New("cronfence: the store did not answer in time")

// endRecorder records the end of runs (Store.SlotFinish, which also
// releases the lease): the scheduler's and LockSlot's.
type endRecorder struct {
	store store.Store
	log   *slog.Logger
	stop  <-chan struct{} // closed when retrying must end (shutdown); nil: never
	// batch, when set, takes each end's first attempt into a group
	// commit (finishbatch.go); retries go alone.
	batch *finishBatcher
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
// or when e.stop is closed: the process is going away, and its slot is then
// resumed like a dead owner's.
func (e endRecorder) record(hold *leasekeeper.Hold, ttl time.Duration, p store.SlotFinishParams) (store.SlotFinishResult, error) {
	attempt := min(max(ttl/3, finishAttemptMin), finishAttemptMax)
	pause := finishRetryFirst
	for tries := 1; ; tries++ {
		hold.Quiesce()
		var res store.SlotFinishResult
		var err error
		if tries == 1 && e.batch != nil {
			res, err = e.batch.finish(p, attempt)
		} else {
			// Real time: it bounds how long the database takes to answer.
			ctx, cancel := context.WithTimeoutCause(context.Background(), attempt, errFinishAttemptTimeout)
			res, err = e.store.SlotFinish(ctx, p)
			cancel()
		}
		if err == nil {
			if tries > 1 {
				e.log.Info("cronfence: the end of the run is recorded", "job", p.Job, "slot", p.Slot,
					"generation", p.Generation, "attempts", tries)
			}
			return res, nil
		}
		hold.Resume()
		if errors.Is(err, store.ErrInvalidArgument) || errors.Is(err, store.ErrClosed) || closed(e.stop) {
			return store.SlotFinishResult{}, err
		}
		if tries == 1 {
			e.log.Warn("cronfence: could not record the end of the run; trying again while its lease is renewed",
				"job", p.Job, "slot", p.Slot, "generation", p.Generation, "error", err)
		}
		// Real time, as the bound: the pause is how long a real database
		// gets to recover, which no injected clock moves.
		timer := time.NewTimer(jitter(pause))
		select {
		case <-timer.C:
		case <-e.stop:
			timer.Stop()
		}
		pause = min(2*pause, finishRetryMax)
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

// jitter spreads d by ±20%, so thousands of runs retrying together after
// one outage do not hit the store in step.
func jitter(d time.Duration) time.Duration {
	return d - d/5 + time.Duration(rand.Int64N(int64(d/5)*2+1))
}
