package cronfencetest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cronfence/cronfence/store"
)

// TakeoverOwner is the owner of the holder that TakeOver puts in a run's
// place, as the slot's row and the lease name it afterwards.
const TakeoverOwner = "cronfencetest:takeover"

// takeoverTries bounds the claims TakeOver sends: one more each time the
// run's lease keeper renewed the lease between reading it and claiming.
const takeoverTries = 3

// TakeOver makes the run in progress lose its lease, at the point of the
// handler where the test calls it: another holder takes the slot over, as
// a replica does once the run's lease expired while its process was paused
// or cut off. From then on run.Fence and run.Complete return an error
// wrapping cronfence.ErrLeaseLost, and the handler's transaction must roll
// back. ctx is the handler's context, or one derived from it: call TakeOver
// from the handler's own code or from anything the test hands it (a fake
// of a dependency the handler calls with its context).
//
// The taker claims the slot as its next attempt, under a generation one
// higher, by the store's clock pinned a moment after the run's lease
// expires; it returns the taker's lease, also kept in Result.TakenOver.
// When Run returns, the taker releases the lease, so later runs of the job
// are not refused while its TTL runs; the slot stays running under its
// generation, as a taker that died leaves it, and running it again resumes
// it as the attempt after the taker's. Called again, TakeOver returns the
// same lease.
//
// A takeover waits for a transaction fenced under the run's lease to end:
// that is what the fence is for. So call it before the handler's
// transaction fences (PostgreSQL and MySQL then refuse the takeover at
// once, and the test fails saying so); on SQLite, where an open write
// transaction holds the file's one write lock, before the transaction
// begins (otherwise the takeover fails after the store's busy timeout).
//
// Failures are reported with the test's Errorf (TakeOver may be called from
// any goroutine) and return a zero lease. A ctx that does not come from a
// handler that Run runs is a mistake in the test, and panics.
func TakeOver(ctx context.Context) store.Lease {
	r, ok := ctx.Value(runningKey{}).(*running)
	if !ok {
		panic("cronfencetest: TakeOver needs the context of a handler that cronfencetest.Run runs, or one derived from it")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.ended:
		r.tb.Errorf("cronfencetest: TakeOver of job %q called after its run ended", r.job.Name)
		return store.Lease{}
	case r.res.TakenOver.Generation != 0:
		return r.res.TakenOver
	}
	// The handler's context may have ended (its Timeout): the takeover is
	// the test's, not the handler's.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	lease, err := r.takeOver(ctx)
	if err != nil {
		run := r.res.Run
		r.tb.Errorf("cronfencetest: TakeOver of job %q, slot %s, generation %d: %v", run.Job, run.Slot.Format(time.RFC3339), run.Generation, err)
		return store.Lease{}
	}
	r.res.TakenOver = lease
	return lease
}

// takeOver claims the run's slot for TakeoverOwner once its lease expired.
func (r *running) takeOver(ctx context.Context) (store.Lease, error) {
	run := r.res.Run
	for range takeoverTries {
		cur, err := r.store.LeaseGet(ctx, run.Lease)
		if err != nil {
			return store.Lease{}, fmt.Errorf("reading lease %q: %w", run.Lease, err)
		}
		if cur.Generation != run.Generation {
			return store.Lease{}, fmt.Errorf("lease %q is held by %s at generation %d already", run.Lease, cur.Owner, cur.Generation)
		}
		claim, err := r.store.SlotClaim(ctx, store.SlotClaimParams{
			Job: run.Job, Slot: run.Slot, LeaseName: run.Lease, Owner: TakeoverOwner, TTL: r.job.LeaseTTL,
			MaxAttempts: run.Attempt + 1,
			// A microsecond (every store's precision) after the lease's
			// expiry: the first claim that may take it.
			Now: cur.ExpiresAt.Add(time.Microsecond),
		})
		switch {
		case err != nil:
			return store.Lease{}, fmt.Errorf("claiming the slot: %w", err)
		case claim.Claimed:
			return claim.Lease, nil
		case claim.Refusal == store.ClaimHeld && claim.Lease.Generation == run.Generation:
			continue // renewed since it was read: its expiry moved
		case claim.Refusal == store.ClaimLeaseBusy:
			return store.Lease{}, errors.New("a transaction fenced under the run's lease is still open, and a takeover waits for it to end (the fence at work): call TakeOver before the handler's transaction fences")
		case claim.Refusal == store.ClaimCompleted:
			return store.Lease{}, errors.New("the slot is completed already (by the handler's transaction?): there is nothing left to take over")
		default:
			return store.Lease{}, fmt.Errorf("the slot's claim was refused %s", claim.Refusal)
		}
	}
	return store.Lease{}, fmt.Errorf("lease %q was renewed at each of %d tries", run.Lease, takeoverTries)
}

// end ends the run for TakeOver and releases the taker's lease, if it took
// one, so that the taker does not hold the job's lease past the test's run.
func (r *running) end() {
	r.mu.Lock()
	r.ended = true
	taker := r.res.TakenOver
	r.mu.Unlock()
	if taker.Generation == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if _, err := r.store.LeaseRelease(ctx, taker.Ref()); err != nil {
		r.tb.Errorf("cronfencetest: releasing the lease %q that TakeOver took at generation %d: %v", taker.Name, taker.Generation, err)
	}
}
