package cronfence

import (
	"context"
	"fmt"
	"time"

	"github.com/cronfence/cronfence/store"
)

// Catch-up: the missed slot of each job claimed once, at start-up and after
// an outage, inside its CatchUpWindow.

// runCatchUp claims, in one round trip for all jobs, each job's candidate
// slot if it lies inside the job's catch-up window: at start-up the most
// recent slot, after an outage the latest slot that fired while the store
// was down. A slot already claimed (run, running or skipped) is refused by
// the store, so this costs one query when there is nothing to do.
//
// At start-up a slot from before the job was first registered (on any
// replica) is not a missed slot: the job did not exist then. A job added at
// 12:29:34 does not run its 12:29:00 slot, as a Kubernetes CronJob does
// not. A slot that fired while the store was down came after this replica
// registered the job.
func (s *Scheduler) runCatchUp(ctx context.Context, now time.Time, candidates map[string]time.Time, startup bool) {
	s.mu.Lock()
	var (
		jobs  []*registered
		items []store.SlotClaimParams
	)
	for name, slot := range candidates {
		r := s.jobs[name]
		if r == nil || r.CatchUpWindow <= 0 || slot.IsZero() || now.Sub(slot) > r.CatchUpWindow {
			continue
		}
		if startup && (r.firstSeen.IsZero() || slot.Before(r.firstSeen)) {
			continue // unknown (the registration failed, and was logged) or before the job existed
		}
		jobs = append(jobs, r)
		items = append(items, r.claimParams(slot.UTC(), s.cfg.Owner, s.liveKey, true))
	}
	s.mu.Unlock()
	if len(items) == 0 {
		return
	}
	sent := s.cfg.Clock.Now()
	results, err := s.claimBatch(ctx, items)
	if err != nil {
		s.mu.Lock()
		for i, r := range jobs { // try again when the store is back (after this replica registered them)
			if items[i].Slot.After(s.missed[r.Name]) {
				s.missed[r.Name] = items[i].Slot
			}
		}
		s.mu.Unlock()
		s.storeDown(err, nil)
		return
	}
	for i, r := range results {
		s.observeClaim(jobs[i].Name, items[i].Slot, r, claimCatchUp)
		s.resolveDeposed(ctx, jobs[i].Name, r)
		if r.Refusal == store.ClaimLeaseBusy {
			s.retryBusy(ctx, &entry{job: jobs[i], slot: items[i].Slot, catchUp: true}, r.Lease)
			continue
		}
		if !r.Claimed {
			continue
		}
		s.startRun(jobs[i], r, sent, true, catchUpLine(items[i].Slot, r))
	}
}

// registerJobs records the jobs' first registration (Store.JobRegister, one
// round trip) and notes when each was first seen, for catch-up. A failure
// is logged; the jobs are tried again at the next tick, and catch-up at
// start-up passes over a job whose first registration is unknown.
func (s *Scheduler) registerJobs(ctx context.Context, names []string) {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	regs, err := s.store.JobRegister(ctx, store.JobRegisterParams{Jobs: names})
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("cronfence: could not record the jobs' registration; catch-up at start-up passes over them until it is", "jobs", len(names), "error", err)
		}
		s.unregistered = append(s.unregistered, names...)
		return
	}
	for _, reg := range regs {
		if r := s.jobs[reg.Job]; r != nil {
			r.firstSeen = reg.FirstSeen
		}
	}
}

// catchUpLine is the first log line of a catch-up run of slot.
func catchUpLine(slot time.Time, r store.SlotClaimResult) string {
	late := r.Lease.AcquiredAt.Sub(slot)
	return fmt.Sprintf("Catch-up run for missed slot %s (%ds late)", slot.UTC().Format(time.RFC3339), int64(late.Seconds()))
}
