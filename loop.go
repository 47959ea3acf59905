package cronfence

import (
	"context"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
)

// The scheduling loop: one timer for the next fire, re-armed as jobs come
// due, and the tick that does what is due.

func (s *Scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// loop sleeps until the earliest entry is due, at most MaxSleep at a time so
// that a suspended host or a clock jump is noticed, and fires.
func (s *Scheduler) loop(ctx context.Context) {
	defer close(s.loopDone)
	defer s.stopNotices()   // last: nothing decides by them any more
	defer s.scans.Wait()    // before loopDone: a pass may still start a run, which Stop then waits for
	defer s.removeReplica() // after the last tick, so no heartbeat follows it
	defer s.stopMonitor()   // after the last tick, so no pass follows it
	exact, _ := s.cfg.Clock.(exactSleeper)
	for {
		s.mu.Lock()
		now := s.scheduleNow()
		wait, fire := s.cfg.MaxSleep, false // fire: the wait ends at the next fire's instant
		if s.heap.Len() > 0 {
			if d := max(s.heap[0].fireAt.Sub(now), 0); d <= wait {
				wait, fire = d, true
			}
		}
		if s.resumeScans() {
			if d := max(s.nextResume.Sub(now), 0); d < wait {
				wait, fire = d, false
			}
		}
		s.mu.Unlock()
		exactly := exact != nil && fire
		slept := s.cfg.Clock.Now()
		if exactly && wait <= clock.TimerSlack {
			// The last moments before a fire: slept exactly, not on a
			// timer that would wake up to a millisecond late (and the
			// slots' claims with it).
			if ctx.Err() != nil {
				return
			}
			exact.SleepExactly(wait)
		} else {
			timerWait := wait
			if exactly {
				timerWait = wait - clock.TimerSlack // the rest slept exactly, above
			}
			timer := s.cfg.Clock.NewTimer(timerWait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-s.wake:
				timer.Stop()
				continue
			case <-timer.C():
			}
			if timerWait < wait {
				if step := s.clockStep(slept, timerWait); step != 0 {
					s.busy.Add(1)
					s.tick(ctx, step)
					s.busy.Add(-1)
				}
				continue
			}
		}
		s.busy.Add(1)
		s.tick(ctx, s.clockStep(slept, wait))
		s.busy.Add(-1)
	}
}

// exactSleeper is a Clock that can sleep the last moments before an
// instant exactly (clock.Real): the loop then sets its timer
// clock.TimerSlack early and sleeps the rest. A test's fake clock has
// only timers.
type exactSleeper interface {
	SleepExactly(d time.Duration)
}

// claimLeadReal is how long before its slot, on the real clock, a slot's
// claim is sent: the claim is judged as of the slot by the database clock
// (store.SlotClaimParams.WaitDue), and the handler starts once the slot is
// due by that clock (the store waited in the claim, or committed it ahead
// and said how long is left: store.SlotClaimResult.Wait). So what used to
// come between the slot and the claim's start (the loop's wake-up, taking
// a connection, the round trip, planning the statement again after an
// autovacuum ANALYZE or vacuum: 7–13 ms on one machine, 14–22 ms on a
// slower 2-core VM, where a 10 ms lead left the rest after the slot) comes
// before the slot, and the offset measured from the database clock, an
// upper bound a round trip wide, no longer decides how late the claim
// starts. Where the store waits in the claim (a slot with a row or a held
// lease; MySQL, SQLite), it costs the claim a connection held that much
// longer, and the loop that long blocked in the claim: slots are whole
// seconds, so no other slot's first claim comes due meanwhile, but a
// fallback or retry due then waits for it. It stays well inside
// store.MaxClaimWait. A fake clock cannot be waited for by the database: it
// sends claims at the slot.
const claimLeadReal = 50 * time.Millisecond

// latest is the later of a and b.
func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// clockStepThreshold is how far this replica's clock may move away from a
// timer's wait before the loop takes it for a step of the clock.
const clockStepThreshold = time.Second

// clockStep returns how far this replica's clock was stepped while the loop
// slept for wait from slept: timers run on the monotonic clock, which an NTP
// step, a resumed VM or an operator's date -s does not move, so the wall
// clock's movement should equal the wait. Zero when it (nearly) does. A
// timer that fires late (a busy host) reads as a small forward step, which
// only costs one clock measurement.
func (s *Scheduler) clockStep(slept time.Time, wait time.Duration) time.Duration {
	moved := s.cfg.Clock.Now().Round(0).Sub(slept.Round(0)) // wall clock only: Round(0) drops the monotonic reading
	if step := moved - wait; step > clockStepThreshold || step < -clockStepThreshold {
		return step
	}
	return 0
}

// tick does what is due: clock check, catch-up, pruning and fires. When
// the replica's clock was stepped (step not zero), its offset from the
// database clock is measured again first: every instant the scheduler
// judges by (slots, its own next clock check, prune and resume passes) is
// this clock corrected by that offset, so one measurement puts them all
// right, before anything fires early or waits for a clock that jumped
// back.
func (s *Scheduler) tick(ctx context.Context, step time.Duration) {
	if step != 0 {
		s.log.Warn("cronfence: this replica's clock was stepped (or the host slept); measuring its offset from the database clock again", "step", step)
		s.measureOffset(ctx)
	}
	now := s.scheduleNow()
	s.mu.Lock()
	// A step's measurement counts as this period's clock check. A replica
	// that keeps a registry row takes it from its next heartbeat's answer
	// (clockFromHeartbeat), at most HeartbeatEvery later; when none came
	// by then (its heartbeats fail: a store down, more jobs than a row
	// holds), it reads the clock itself.
	viaHeartbeat := s.registers() && now.Before(s.nextClockCheck.Add(s.cfg.HeartbeatEvery+s.cfg.MaxSleep))
	checkClock := step == 0 && !now.Before(s.nextClockCheck) && !viaHeartbeat
	if checkClock || step != 0 {
		s.nextClockCheck = now.Add(s.cfg.ClockCheckEvery)
	}
	// An API-only replica (DisableTimers) leaves pruning, resuming and the
	// absence checks to the replicas that fire.
	timers := !s.cfg.DisableTimers
	prune := timers && s.cfg.Retention > 0 && !now.Before(s.nextPrune)
	if prune {
		s.nextPrune = now.Add(s.cfg.PruneEvery)
	}
	resume := s.resumeScans() && !now.Before(s.nextResume)
	if resume {
		s.nextResume = now.Add(s.cfg.ResumeEvery)
	}
	down := s.outage.down
	unregistered := s.unregistered
	s.unregistered = nil
	due := s.heap.popDue(now)
	// Re-arm before claiming, so a slow store never delays the next slot.
	// A retry was re-armed when it first fired.
	// Armed after the slot fired, not after now: a slot fired ahead of its
	// instant (claimLead) is still after now.
	for _, e := range due {
		if !e.retry {
			s.arm(e.job, latest(now, e.slot))
		}
	}
	s.passOver(due, now)
	due = s.deferToPreferred(due, now)
	s.mu.Unlock()

	if checkClock || down {
		// While the store is down, every tick probes it, so its return is
		// noticed (and the missed slots caught up) before the next fire.
		s.measureOffset(ctx)
	}
	if len(unregistered) > 0 {
		s.registerJobs(ctx, unregistered)
	}
	// Read after the probe: when it found the store back, the missed slots
	// are claimed now, before this tick's fires, which they came before.
	// (A fire claimed first would hold the job's lease, and the missed
	// slot would wait behind it, buffered, and run after the later slot.)
	s.mu.Lock()
	missed, catchUp := s.outage.takeMissed()
	s.mu.Unlock()
	if catchUp {
		s.runCatchUp(ctx, now, missed, false)
	}
	if prune {
		s.pruneInBackground(ctx)
	}
	if timers {
		s.checkAbsence(ctx, now)
	}
	if resume && s.resumeWanted(now) {
		s.resumeInBackground(ctx)
	}
	if len(due) > 0 {
		s.fire(ctx, due, now)
	}
	s.heartbeatIfDue(ctx, now)
}
