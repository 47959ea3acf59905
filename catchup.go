package cronfence

import (
	"context"
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
	var batch []*entry
	for name, slot := range candidates {
		r := s.jobs[name]
		if r == nil || r.CatchUpWindow <= 0 || slot.IsZero() || now.Sub(slot) > r.CatchUpWindow {
			continue
		}
		if firstSeen := s.firstSeen[name]; startup && (firstSeen.IsZero() || slot.Before(firstSeen)) {
			continue // unknown (the registration failed, and was logged) or before the job existed
		}
		batch = append(batch, &entry{job: r, slot: slot.UTC(), origin: OriginCatchUp})
	}
	s.mu.Unlock()
	s.recordDeadAmong(ctx, batch)
	// A claim that cannot reach the store leaves the slots missed again
	// (storeDown), for the pass after the store is back.
	s.claim(ctx, batch)
}

// registerJobs records the jobs' first registration (Store.JobRegister, one
// round trip) and notes when each with a CatchUpWindow was first seen, for
// catch-up. A failure
// is logged; the jobs are tried again at the next tick, and catch-up at
// start-up passes over a job whose first registration is unknown.
func (s *Scheduler) registerJobs(ctx context.Context, names []string) {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	const failed = "cronfence: could not record the jobs' registration; catch-up at start-up passes over them until it is"
	regs, err := s.store.JobRegister(ctx, store.JobRegisterParams{Jobs: names})
	if err != nil {
		if ctx.Err() == nil {
			s.warnRepeated(failed, "jobs", len(names), "error", err)
		}
		s.mu.Lock()
		s.unregistered = append(s.unregistered, names...)
		s.mu.Unlock()
		return
	}
	s.failures.over(failed)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, reg := range regs {
		// Only catch-up reads it, and only of jobs with a window: the
		// others keep none.
		if r := s.jobs[reg.Job]; r != nil && r.CatchUpWindow > 0 {
			if s.firstSeen == nil {
				s.firstSeen = map[string]time.Time{}
			}
			s.firstSeen[reg.Job] = reg.FirstSeen
		}
	}
}
