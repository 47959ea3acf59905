package cronfence

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cronfence/cronfence/internal/peers"
	"github.com/cronfence/cronfence/store"
)

// resumer finds the slots whose run died mid-way (its owner crashed, or
// lost its lease) and claims them again with one more attempt, or ends
// them failed on their last; and the failed slots whose retry the replica
// whose attempt failed did not make (it stopped or died), and retries
// them. A scan runs every ResumeEvery, when wanted (peers.ResumeWanted),
// on a goroutine of its own, one at a time: its claim of a dead run's slot
// must take that slot's lease row, which a deposed writer's transaction
// may hold for as long as that writer is frozen, and a scan in the loop
// held up every other job's fires meanwhile.
type resumer struct {
	e        *env
	jobs     *jobSet
	retries  *retryPlanner
	peers    *peers.Peers
	claim    func(ctx context.Context, batch []*entry) // the claimer's
	down     func() bool                               // the claimer's: the store is down
	buffered func(job *registered, slot time.Time)     // the claimer's runBuffered

	mu      sync.Mutex
	next    time.Time // the next scan, on this replica's clock
	running bool
	done    sync.WaitGroup
}

// scans reports whether this replica scans now: it fires (an API-only
// replica leaves scans to those that do) and the store is up. While the
// store is down next stays in the past, and the loop must not wait for
// it: it would spin.
func (r *resumer) scans() bool {
	return r.e.cfg.ResumeEvery > 0 && r.e.timers() && !r.down()
}

// nextScan is when the next scan is due, if this replica scans now.
func (r *resumer) nextScan() (time.Time, bool) {
	if !r.scans() {
		return time.Time{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.next, true
}

// tick starts a scan when one is due, wanted, and none is under way.
func (r *resumer) tick(ctx context.Context, now time.Time) {
	if !r.scans() {
		return
	}
	r.mu.Lock()
	if now.Before(r.next) {
		r.mu.Unlock()
		return
	}
	r.next = now.Add(r.e.cfg.ResumeEvery)
	r.mu.Unlock()
	if !r.peers.ResumeWanted(now) {
		return
	}
	r.mu.Lock()
	if r.running {
		r.mu.Unlock()
		return // the last scan is still waiting; its answer will do
	}
	r.running = true
	r.done.Add(1)
	r.mu.Unlock()
	r.e.Busy.Add(1)
	go func() {
		defer r.e.Busy.Add(-1)
		defer r.done.Done()
		defer func() { r.mu.Lock(); r.running = false; r.mu.Unlock() }()
		r.scan(ctx)
	}()
}

// stop waits for a scan under way: it may still start a run, which Stop
// then waits for.
func (r *resumer) stop() { r.done.Wait() }

// scan claims again, with one more attempt, the slots whose run died, and
// the failed slots open to a retry whose backoff has passed. One query
// finds them; they are claimed, the latest per job, in one more round
// trip.
func (r *resumer) scan(ctx context.Context) {
	const failed = "cronfence: could not look for interrupted runs"
	listCtx, cancel := r.e.Bounded(ctx)
	dead, err := r.e.Store.SlotListInterrupted(listCtx)
	cancel()
	if err != nil {
		if ctx.Err() == nil { // else stopping: nothing to warn about
			r.e.WarnRepeated(failed, "error", err)
		}
		return
	}
	r.e.Failures.Over(failed)
	if len(dead) == 0 {
		return
	}
	now := r.e.Now()
	// The latest slot of each job that has an attempt left: one out of
	// attempts would only be refused, on every scan, and would hide an
	// older slot that can still be resumed; those are abandoned instead.
	// A failed slot open to a retry is retried once due (retryDue).
	r.retries.forgetClosed(now)
	latest := map[string]deadSlot{}
	var spent []deadSlot
	var retries []*entry
	interrupted := false
	for _, sl := range dead {
		job := r.jobs.get(sl.Job)
		if job == nil {
			continue
		}
		if sl.Status == store.SlotFailed {
			if retryDue(job, sl, now) && !r.retries.isGivenUp(sl) {
				retries = append(retries, &entry{job: job, slot: sl.Slot, origin: OriginRetry, attempt: int32(sl.Attempts)})
			}
			continue
		}
		interrupted = true
		if sl.Attempts >= job.MaxAttempts {
			spent = append(spent, deadSlot{job, sl})
			continue
		}
		if cur, ok := latest[sl.Job]; !ok || sl.Slot.After(cur.slot.Slot) {
			latest[sl.Job] = deadSlot{job, sl}
		}
	}
	batch := make([]*entry, 0, len(latest)+len(retries))
	resumed := make([]deadSlot, 0, len(latest))
	for _, d := range latest {
		batch = append(batch, &entry{job: d.job, slot: d.slot.Slot, origin: OriginResume})
		resumed = append(resumed, d)
	}
	batch = append(batch, retries...)
	if interrupted {
		// Until a scan finds none: a claim here may be refused lease_busy.
		// Not for failed slots waiting for their retry: those are the
		// failed replica's to retry, and a scan's only when it is gone.
		r.peers.RescanSoon()
	}
	for _, a := range spent {
		r.abandon(ctx, a.job, a.slot)
	}
	r.recordInterrupted(ctx, resumed)
	r.claim(ctx, batch)
}

// recordInterrupted records the dead attempts of the slots about to be
// resumed, each as its holding's run row (interrupted, its owner, start
// and end, and how it was found dead), so an attempt killed mid-run stays
// in the history; of several replicas that find it, one writes it
// (store.Store.RunInterrupted). Before the claim, so the row comes before
// the next attempt's. One round trip; a failure is logged and holds no
// resume up. Its output lines are not kept: a run's lines reach the store
// only with its end, which a dead run never recorded.
func (r *resumer) recordInterrupted(ctx context.Context, dead []deadSlot) {
	if len(dead) == 0 {
		return
	}
	items := make([]store.RunInterruptedParams, len(dead))
	for i, d := range dead {
		sl := d.slot
		items[i] = store.RunInterruptedParams{
			Job: sl.Job, Slot: sl.Slot, LeaseName: sl.LeaseName, Owner: sl.Owner, Generation: sl.Generation,
			Error: fmt.Sprintf("interrupted on attempt %d of %d: the run by %s at generation %d never recorded its end; %s found it dead",
				sl.Attempts, d.job.MaxAttempts, sl.Owner, sl.Generation, r.e.cfg.Owner),
			Log: "No output kept: a run's lines reach the database with its end, which this run never recorded",
		}
	}
	const failed = "cronfence: could not record the interrupted runs of the slots it resumes"
	bctx, cancel := r.e.Bounded(ctx)
	defer cancel()
	if _, err := r.e.Store.RunInterrupted(bctx, items); err != nil {
		if ctx.Err() == nil {
			r.e.WarnRepeated(failed, "slots", len(items), "first_job", items[0].Job, "error", err)
		}
		return
	}
	r.e.Failures.Over(failed)
}

// recordDeadAmong records the dead attempts of the slots a catch-up is
// about to claim, as recordInterrupted does for a resume: a replica killed
// mid-run and started again claims its slot back by catch-up, attempt + 1,
// before any resume scan. One round trip (the scan for interrupted runs),
// and one more when some of the slots have a dead run. Catch-up is rare:
// at start-up and after an outage.
func (r *resumer) recordDeadAmong(ctx context.Context, batch []*entry) {
	if len(batch) == 0 {
		return
	}
	listCtx, cancel := r.e.Bounded(ctx)
	dead, err := r.e.Store.SlotListInterrupted(listCtx)
	cancel()
	if err != nil || len(dead) == 0 {
		return // the claim that follows meets the same store, and says so
	}
	wanted := make(map[slotKey]*registered, len(batch))
	for _, e := range batch {
		wanted[slotKey{e.job.Name, e.slot.UnixNano()}] = e.job
	}
	var found []deadSlot
	for _, sl := range dead {
		if r := wanted[slotKey{sl.Job, sl.Slot.UnixNano()}]; r != nil && sl.Status == store.SlotRunning {
			found = append(found, deadSlot{r, sl})
		}
	}
	r.recordInterrupted(ctx, found)
}

// deadSlot is a dead slot of a registered job: with no attempt left
// (abandon), or one to resume (recordInterrupted).
type deadSlot struct {
	job  *registered
	slot store.Slot
}

// abandon ends a dead slot with no attempt left failed, and starts the
// slot buffered behind it.
func (r *resumer) abandon(ctx context.Context, job *registered, sl store.Slot) {
	ctx, cancel := r.e.Bounded(ctx)
	defer cancel()
	if res, ok := abandonDead(ctx, r.e, job, sl); ok && !res.Buffered.IsZero() {
		r.buffered(job, res.Buffered)
	}
}

// abandonDead ends as failed a dead slot that has no attempt left: its run
// died (its process was killed, or it could not record its end) on the
// job's last attempt, and no claim may run it again, so it would otherwise
// stay running for good. Of several replicas (or lock hosts) at once, one
// records it, and only once the run has been dead for a lease TTL: a live
// owner that lost its lease records its own end first (on PostgreSQL and
// MySQL an owner whose process is gone is not waited for). ok says this
// call ended it.
func abandonDead(ctx context.Context, e *env, job *registered, sl store.Slot) (res store.SlotFinishResult, ok bool) {
	why := fmt.Sprintf("interrupted on its last attempt (%d of %d): the run by %s at generation %d died without recording its end",
		sl.Attempts, job.MaxAttempts, sl.Owner, sl.Generation)
	res, err := e.Store.SlotAbandon(ctx, store.SlotAbandonParams{
		Job: sl.Job, Slot: sl.Slot, LeaseName: sl.LeaseName, Owner: sl.Owner, Generation: sl.Generation,
		MaxAttempts: job.MaxAttempts, Grace: job.LeaseTTL, Error: why,
		Logs: []string{fmt.Sprintf("Slot %s ended failed by %s: %s; no attempt is left",
			sl.Slot.UTC().Format(time.RFC3339), e.cfg.Owner, why)},
	})
	if err != nil {
		if ctx.Err() == nil {
			e.Log.Warn("cronfence: could not end a dead slot that has no attempt left", "job", sl.Job, "slot", sl.Slot, "error", err)
		}
		return res, false
	}
	if !res.SlotUpdated {
		return res, false // another replica did, or its owner finished after all
	}
	e.Log.Warn("cronfence: slot failed: "+why, "job", sl.Job, "slot", sl.Slot, "attempts", sl.Attempts)
	return res, true
}
