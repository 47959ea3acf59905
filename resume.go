package cronfence

import (
	"context"
	"fmt"
	"time"

	"github.com/cronfence/cronfence/store"
)

// Resume: slots whose run died, claimed again with one more attempt, or
// ended failed on their last; and failed slots whose retry the replica
// whose attempt failed did not make (it stopped or died), retried.

// resumeScans reports whether this replica scans for interrupted runs now:
// it fires (an API-only replica leaves them to those that do) and the store
// is up. While the store is down the scan is not done and nextResume stays
// in the past, so the loop must not wait for it: it would spin. Callers
// hold mu.
func (s *Scheduler) resumeScans() bool {
	return s.cfg.ResumeEvery > 0 && !s.cfg.DisableTimers && !s.outage.down
}

// resumeInBackground runs a resume pass in a goroutine of its own, one at
// a time. Its claim of a dead run's slot must take that slot's lease row,
// which a deposed writer's transaction may hold FOR KEY SHARE for as long as
// that writer is frozen mid-way (that is the fence at work); run in the
// tick, it held up every other job's fires on every replica meanwhile, and
// slots that came due then were left behind.
func (s *Scheduler) resumeInBackground(ctx context.Context) {
	if !s.resuming.CompareAndSwap(false, true) {
		return // the last pass is still waiting; its answer will do
	}
	s.busy.Add(1)
	s.scans.Add(1)
	go func() {
		defer s.scans.Done()
		defer s.busy.Add(-1)
		defer s.resuming.Store(false)
		s.resumeInterrupted(ctx)
	}()
}

// resumeInterrupted claims again, with one more attempt, the slots whose
// run died mid-way: its owner crashed (on PostgreSQL noticed as soon as the
// owner's session is gone) or lost its lease; and the failed slots open to
// a retry whose backoff has passed (retry.go). One query finds them; they
// are claimed, the latest per job, in one more round trip.
func (s *Scheduler) resumeInterrupted(ctx context.Context) {
	const failed = "cronfence: could not look for interrupted runs"
	listCtx, cancel := s.bounded(ctx)
	dead, err := s.store.SlotListInterrupted(listCtx)
	cancel()
	if err != nil {
		if ctx.Err() == nil { // else stopping: nothing to warn about
			s.warnRepeated(failed, "error", err)
		}
		return
	}
	s.failures.over(failed)
	if len(dead) == 0 {
		return
	}
	now := s.scheduleNow()
	s.mu.Lock()
	// The latest slot of each job here that has an attempt left: one out
	// of attempts would only be refused, on every scan, and would hide an
	// older slot that can still be resumed. Those are abandoned instead.
	// A failed slot open to a retry is retried once due (retryDue).
	s.forgetClosedRetries(now)
	latest := map[string]store.Slot{}
	var spent []deadSlot
	var retries []*entry
	interrupted := false
	for _, sl := range dead {
		r := s.jobs[sl.Job]
		if r == nil {
			continue
		}
		if sl.Status == store.SlotFailed {
			if retryDue(r, sl, now) && !s.retryGivenUp(sl) {
				retries = append(retries, &entry{job: r, slot: sl.Slot, origin: OriginRetry, attempt: int32(sl.Attempts)})
			}
			continue
		}
		interrupted = true
		if sl.Attempts >= r.MaxAttempts {
			spent = append(spent, deadSlot{r, sl})
			continue
		}
		if cur, ok := latest[sl.Job]; !ok || sl.Slot.After(cur.Slot) {
			latest[sl.Job] = sl
		}
	}
	batch := make([]*entry, 0, len(latest)+len(retries))
	resumed := make([]deadSlot, 0, len(latest))
	for name, sl := range latest {
		batch = append(batch, &entry{job: s.jobs[name], slot: sl.Slot, origin: OriginResume})
		resumed = append(resumed, deadSlot{s.jobs[name], sl})
	}
	batch = append(batch, retries...)
	s.mu.Unlock()
	if interrupted {
		// Until a scan finds none: a claim here may be refused lease_busy.
		// Not for failed slots waiting for their retry: those are the
		// failed replica's to retry, and a scan's only when it is gone.
		s.rescanSoon()
	}
	for _, a := range spent {
		s.abandon(ctx, a.job, a.slot)
	}
	s.recordInterrupted(ctx, resumed)
	s.claim(ctx, batch)
}

// recordInterrupted records the dead attempts of the slots about to be
// resumed, each as its holding's run row (interrupted, its owner, start
// and end, and how it was found dead), so an attempt killed mid-run stays
// in the history; of several replicas that find it, one writes it
// (store.Store.RunInterrupted). Before the claim, so the row comes before
// the next attempt's. One round trip; a failure is logged and holds no
// resume up. Its output lines are not kept: a run's lines reach the store
// only with its end, which a dead run never recorded.
func (s *Scheduler) recordInterrupted(ctx context.Context, dead []deadSlot) {
	if len(dead) == 0 {
		return
	}
	items := make([]store.RunInterruptedParams, len(dead))
	for i, d := range dead {
		sl := d.slot
		items[i] = store.RunInterruptedParams{
			Job: sl.Job, Slot: sl.Slot, LeaseName: sl.LeaseName, Owner: sl.Owner, Generation: sl.Generation,
			Error: fmt.Sprintf("interrupted on attempt %d of %d: the run by %s at generation %d never recorded its end; %s found it dead",
				sl.Attempts, d.job.MaxAttempts, sl.Owner, sl.Generation, s.cfg.Owner),
			Log: "No output kept: a run's lines reach the database with its end, which this run never recorded",
		}
	}
	const failed = "cronfence: could not record the interrupted runs of the slots it resumes"
	bctx, cancel := s.bounded(ctx)
	defer cancel()
	if _, err := s.store.RunInterrupted(bctx, items); err != nil {
		if ctx.Err() == nil {
			s.warnRepeated(failed, "slots", len(items), "first_job", items[0].Job, "error", err)
		}
		return
	}
	s.failures.over(failed)
}

// recordDeadAmong records the dead attempts of the slots a catch-up is
// about to claim, as recordInterrupted does for a resume: a replica killed
// mid-run and started again claims its slot back by catch-up, attempt + 1,
// before any resume scan. One round trip (the scan for interrupted runs),
// and one more when some of the slots have a dead run. Catch-up is rare:
// at start-up and after an outage.
func (s *Scheduler) recordDeadAmong(ctx context.Context, batch []*entry) {
	if len(batch) == 0 {
		return
	}
	listCtx, cancel := s.bounded(ctx)
	dead, err := s.store.SlotListInterrupted(listCtx)
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
	s.recordInterrupted(ctx, found)
}

// deadSlot is a dead slot of a registered job: with no attempt left
// (abandon), or one to resume (recordInterrupted).
type deadSlot struct {
	job  *registered
	slot store.Slot
}

// abandon ends as failed a dead slot that has no attempt left: its run
// died (its process was killed, or it could not record its end) on the
// job's last attempt, and no claim may run it again, so it would otherwise
// stay running for good, in the dashboard and for every check. One round
// trip; of several replicas scanning at once, one records it. The grace of
// one lease TTL past the lease's end leaves a live owner that lost its
// lease (and cancelled its handler at the expiry) time to record the end
// itself; on PostgreSQL an owner whose process is gone is not waited for.
func (s *Scheduler) abandon(ctx context.Context, job *registered, sl store.Slot) {
	why := fmt.Sprintf("interrupted on its last attempt (%d of %d): the run by %s at generation %d died without recording its end",
		sl.Attempts, job.MaxAttempts, sl.Owner, sl.Generation)
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	res, err := s.store.SlotAbandon(ctx, store.SlotAbandonParams{
		Job: sl.Job, Slot: sl.Slot, LeaseName: sl.LeaseName, Owner: sl.Owner, Generation: sl.Generation,
		MaxAttempts: job.MaxAttempts, Grace: job.LeaseTTL, Error: why,
		Logs: []string{fmt.Sprintf("Slot %s ended failed by %s: %s; no attempt is left",
			sl.Slot.UTC().Format(time.RFC3339), s.cfg.Owner, why)},
	})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("cronfence: could not end a dead slot that has no attempt left", "job", sl.Job, "slot", sl.Slot, "error", err)
		}
		return
	}
	if !res.SlotUpdated {
		return // another replica did, or its owner finished after all
	}
	s.log.Warn("cronfence: slot failed: "+why, "job", sl.Job, "slot", sl.Slot, "attempts", sl.Attempts)
	if !res.Buffered.IsZero() {
		s.runBuffered(job, res.Buffered)
	}
}
