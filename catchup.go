package cronfence

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/cronfence/cronfence/store"
)

// Slots missed while the store could not be reached, and at start-up: the
// claimer counts the store down on a claim that cannot reach it and up at
// the next round trip that does, and then catches up.

// outage is the store's reachability as the claims see it. The claimer's
// mu guards it.
type outage struct {
	down    bool                 // the last claim could not reach the store
	catchUp bool                 // the store came back: a catch-up pass is due
	missed  map[string]time.Time // per job, the latest slot left to catch-up while the store was down
}

// storeDown handles a claim of batch that could not reach the store: the
// store counts as down until a round trip reaches it again. Scheduled slots
// and catch-ups are left to catch-up, except those of jobs that run
// without a lease (RunWhenStoreDown: fail-open, started now); a resume is
// tried again by the scan after the store is back, a buffered slot by
// catch-up or the job's next run.
func (c *claimer) storeDown(err error, batch []*entry) {
	var failOpen []*entry
	c.mu.Lock()
	o := &c.outage
	o.down = true
	for _, e := range batch {
		switch {
		case e.origin == OriginScheduled && e.job.RunWhenStoreDown:
			failOpen = append(failOpen, e)
		case e.origin == OriginBackfill:
			c.refire(e, backfillWaitEvery) // its backfill waits for the store
		case e.origin.onTimer():
			slot := e.slot
			if e.origin == OriginCatchUp && e.job.CatchUp == CatchUpAll {
				// Its queue's slots are looked at again after the outage.
				slot = latest(slot, c.catchUps.drop(e.job.Name))
			}
			if slot.After(o.missed[e.job.Name]) {
				if o.missed == nil {
					o.missed = map[string]time.Time{}
				}
				o.missed[e.job.Name] = slot
			}
		}
	}
	c.mu.Unlock()
	c.e.Failures.Failed(c.e.Log, c.e.cfg.Clock.Now(), slog.LevelError, "cronfence: the store is unreachable; slots are left to catch-up",
		"error", err, "origin", batch[0].origin)
	for _, e := range failOpen {
		if !e.job.Disabled {
			c.e.WarnRepeated("cronfence: running without a lease because the store is unreachable (RunWhenStoreDown)",
				"job", e.job.Name, "slot", e.slot)
			c.start(runSpec{job: e.job, slot: e.slot, attempt: 1, origin: OriginFailOpen})
		}
	}
}

// isDown reports whether the last claim could not reach the store.
func (c *claimer) isDown() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.outage.down
}

// storeUp notes a round trip that reached the store; after an outage it
// schedules a catch-up pass and wakes the loop for it.
func (c *claimer) storeUp() {
	c.mu.Lock()
	o := &c.outage
	back := o.down
	if back {
		o.down, o.catchUp = false, true
	}
	c.mu.Unlock()
	if back {
		c.e.Log.Info("cronfence: the store is reachable again; catching up")
		c.e.Failures.Reset()
		c.wake()
	}
}

// catchUpMissed claims the slots missed during an outage once the store is
// back: before the fires of the tick that found it back, which they came
// before (a fire claimed first would hold the job's lease, and the missed
// slot would run after it, buffered).
func (c *claimer) catchUpMissed(ctx context.Context, now time.Time) {
	c.mu.Lock()
	o := &c.outage
	missed, due := o.missed, o.catchUp
	if due {
		o.missed, o.catchUp = nil, false
	}
	c.mu.Unlock()
	if due {
		c.catchUp(ctx, now, missed, false)
	}
}

// catchUp claims, in one round trip for all jobs, each job's candidate
// slot that lies inside the job's catch-up window: at start-up the most
// recent slot, after an outage the latest that fired while the store was
// down. A slot already claimed (run, running or skipped) is refused, so
// this costs one query when there is nothing to do. At start-up a slot
// from before the job was first registered on any replica is not a missed
// slot: the job did not exist then (a job added at 12:29:34 does not run
// its 12:29:00 slot, as a Kubernetes CronJob does not). A job of policy
// CatchUpAll has its candidate and the slots before it inside the window
// queued (catchUpQueues); the oldest is claimed here, and each of the
// others once the one before it is settled.
func (c *claimer) catchUp(ctx context.Context, now time.Time, candidates map[string]time.Time, startup bool) {
	var batch []*entry
	var excluded []store.SlotSkipParams // recorded skipped, not claimed
	for name, slot := range candidates {
		r := c.jobs.get(name)
		if r == nil || r.CatchUp == CatchUpNone || slot.IsZero() || now.Sub(slot) > r.CatchUpWindow {
			continue
		}
		if slot.Add(r.delay(slot)).After(now) {
			// Its run is delayed by the job's jitter until after now: not
			// missed, its timer fires it (timers.arm). The one before may be.
			if slot = r.sched.Prev(slot.Add(-time.Nanosecond)); slot.IsZero() || now.Sub(slot) > r.CatchUpWindow {
				continue
			}
		}
		first := c.jobs.firstSeenOf(name)
		if startup && (first.IsZero() || slot.Before(first)) {
			continue // unknown (its registration failed, and was logged) or before the job existed
		}
		if r.CatchUp == CatchUpAll {
			if e := c.catchUps.add(r, c.missedSlots(r, slot.UTC(), now, first, &excluded)); e != nil {
				batch = append(batch, e)
			}
			continue
		}
		e := &entry{job: r, slot: slot.UTC(), origin: OriginCatchUp}
		if held, ok := r.excluded(e.slot); ok {
			excluded = append(excluded, excludedSkip(c.e.cfg.Owner, e, held))
			continue
		}
		batch = append(batch, e)
	}
	c.skips.recordLater(excluded)
	c.beforeCatchUp(ctx, batch)
	// A claim that cannot reach the store leaves the slots missed again,
	// for the pass after the store is back.
	c.claim(ctx, batch)
}

// recordRegistrations records the jobs' first registration
// (Store.JobRegister, one round trip), which catch-up reads. A failure is
// logged, and the jobs are tried again at the next tick; meanwhile
// catch-up at start-up passes over them.
func recordRegistrations(ctx context.Context, e *env, jobs *jobSet, names []string) {
	ctx, cancel := e.Bounded(ctx)
	defer cancel()
	const failed = "cronfence: could not record the jobs' registration; catch-up at start-up passes over them until it is"
	regs, err := e.Store.JobRegister(ctx, store.JobRegisterParams{Jobs: names})
	if err != nil {
		if ctx.Err() == nil {
			e.WarnRepeated(failed, "jobs", len(names), "error", err)
		}
		jobs.notRecorded(names)
		return
	}
	e.Failures.Over(failed)
	jobs.recorded(regs)
}

// missedSlots are the slots that catch-up of policy all looks at for r,
// oldest first: last and those before it, inside r's window from now and
// not before first (when known), of r.MaxCatchUp slots looked at, the most
// recent. Those further back are left, and said so. Excluded slots count
// as looked at, and are not among them: their skips are added to
// excluded.
func (c *claimer) missedSlots(r *registered, last, now, first time.Time, excluded *[]store.SlotSkipParams) []time.Time {
	inside := func(s time.Time) bool {
		return !s.IsZero() && now.Sub(s) <= r.CatchUpWindow && (first.IsZero() || !s.Before(first))
	}
	var slots []time.Time
	var oldest time.Time
	for s, looked := last, 0; inside(s); s, looked = r.sched.Prev(s.Add(-time.Nanosecond)).UTC(), looked+1 {
		if looked == r.MaxCatchUp {
			c.e.Log.Warn("cronfence: catch-up looks at the job's most recent MaxCatchUp slots; older ones inside its window are not run",
				"job", r.Name, "max_catch_up", r.MaxCatchUp, "oldest_looked_at", oldest)
			break
		}
		oldest = s
		if held, ok := r.excluded(s); ok {
			*excluded = append(*excluded, excludedSkip(c.e.cfg.Owner, &entry{job: r, slot: s, origin: OriginCatchUp}, held))
			continue
		}
		slots = append(slots, s)
	}
	slices.Reverse(slots)
	return slots
}

// catchUpAnswered handles the store's answer to the claim of e's slot, a
// catch-up of policy all, and returns the entry of the job's next queued
// slot to claim now, if any. A slot claimed here goes on once its run ends
// (caughtUp); one whose job's lease another run holds, without a row,
// waits for it; any other refusal settles it.
func (c *claimer) catchUpAnswered(e *entry, r store.SlotClaimResult, waiting bool) *entry {
	switch {
	case r.Claimed, waiting:
		return nil
	case r.Refusal == store.ClaimHeld && r.Recorded == "" && r.Slot.Status == "":
		c.refire(e, catchUpWaitEvery)
		return nil
	}
	return c.catchUps.settled(e.job, e.slot)
}

// caughtUp goes on with the job's catch-up of policy all once this
// replica's run of its slot has ended.
func (c *claimer) caughtUp(job *registered, slot time.Time) {
	if next := c.catchUps.settled(job, slot); next != nil && !c.stopped() {
		c.claim(context.Background(), []*entry{next})
	}
}
