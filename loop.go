package cronfence

import (
	"context"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/internal/monitor"
	"github.com/cronfence/cronfence/internal/peers"
	"github.com/cronfence/cronfence/internal/prune"
	"github.com/cronfence/cronfence/internal/registry"
	"github.com/cronfence/cronfence/internal/schedsync"
)

// loop is the replica's one goroutine on its clock: it sleeps until the
// next fire or scan is due, at most MaxSleep at a time (so a suspended
// host or a clock step is noticed), and ticks. A tick hands what is due
// along the pipeline, timers to claimer, and gives each service its turn.
type loop struct {
	e         *env
	jobs      *jobSet
	timers    *timers
	claimer   *claimer
	peers     *peers.Peers
	heartbeat *registry.Heartbeat
	monitor   *monitor.Monitor
	pruner    *prune.Pruner
	resumer   *resumer
	sync      *schedsync.Sync
	// backfiller drives the backfills of the jobs registered here.
	backfiller *backfiller

	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

// exactSleeper is a Clock that can sleep the last moments before an
// instant exactly (clock.Real): the loop sets its timer clock.TimerSlack
// early and sleeps the rest. A test's fake clock has only timers.
type exactSleeper interface {
	SleepExactly(d time.Duration)
}

// poke wakes the loop to look at the heap again.
func (l *loop) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *loop) start() {
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel, l.done = cancel, make(chan struct{})
	go l.run(ctx)
}

// stop ends the loop and waits for it; no tick starts after.
func (l *loop) stop() {
	l.cancel()
	<-l.done
}

func (l *loop) run(ctx context.Context) {
	defer close(l.done)
	cfg := &l.e.cfg
	exact, _ := cfg.Clock.(exactSleeper)
	for {
		now := l.e.Now()
		wait, fire := cfg.MaxSleep, false // fire: the wait ends at the next fire's instant
		if at, ok := l.timers.next(); ok {
			if d := max(at.Sub(now), 0); d <= wait {
				wait, fire = d, true
			}
		}
		if at, ok := l.sync.Next(); ok && l.e.timers() {
			if d := max(at.Sub(now), 0); d < wait {
				wait, fire = d, false
			}
		}
		if at, ok := l.resumer.nextScan(); ok {
			if d := max(at.Sub(now), 0); d < wait {
				wait, fire = d, false
			}
		}
		exactly := exact != nil && fire
		slept := cfg.Clock.Now()
		if exactly && wait <= clock.TimerSlack {
			// The last moments before a fire: slept exactly, not on a
			// timer that would wake up to a millisecond late.
			if ctx.Err() != nil {
				return
			}
			exact.SleepExactly(wait)
		} else {
			timerWait := wait
			if exactly {
				timerWait = wait - clock.TimerSlack // the rest slept exactly, above
			}
			timer := cfg.Clock.NewTimer(timerWait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-l.wake:
				timer.Stop()
				continue
			case <-timer.C():
			}
			if timerWait < wait {
				if step := l.e.clock.Step(slept, timerWait); step != 0 {
					l.tick(ctx, step)
				}
				continue
			}
		}
		l.tick(ctx, l.e.clock.Step(slept, wait))
	}
}

// tick does what is due. When the replica's clock was stepped (step not
// zero), its offset is measured again first: every instant the replica
// judges by is its clock corrected by that offset, so one measurement puts
// them all right before anything fires early or waits for a clock that
// jumped back.
func (l *loop) tick(ctx context.Context, step time.Duration) {
	l.e.Busy.Add(1)
	defer l.e.Busy.Add(-1)
	e := l.e
	if step != 0 {
		e.Log.Warn("cronfence: this replica's clock was stepped (or the host slept); measuring its offset from the database clock again", "step", step)
		e.clock.Measure(ctx)
	}
	now := e.Now()
	checkClock := e.clock.CheckDue(now, step)
	var due []*entry
	if e.timers() {
		l.sync.Tick(ctx, now) // a schedule changed is armed before the fires
		due = l.preferred(l.timers.popDue(now), now)
	}
	if checkClock || l.claimer.isDown() {
		// While the store is down, every tick probes it, so its return is
		// noticed (and the missed slots caught up) before the next fire.
		e.clock.Measure(ctx)
	}
	if names := l.jobs.takeUnrecorded(); len(names) > 0 {
		recordRegistrations(ctx, e, l.jobs, names)
	}
	// After the probe: when it found the store back, the missed slots are
	// claimed now, before this tick's fires, which they came before.
	l.claimer.catchUpMissed(ctx, now)
	l.pruner.Tick(ctx, now)
	if e.timers() {
		l.monitor.Tick(ctx, now)
	}
	l.resumer.tick(ctx, now)
	if e.timers() {
		l.backfiller.tick(now)
	}
	if len(due) > 0 {
		l.claimer.fire(ctx, due, l.timers.takePassedOver(due), now)
	}
	l.heartbeat.Tick(ctx, now)
}

// preferred returns the due entries this replica claims now, and puts back
// on the heap as fallbacks those another replica is preferred for, as the
// peers choose (peers.Prefer).
func (l *loop) preferred(due []*entry, now time.Time) []*entry {
	in := make([]peers.Due, len(due))
	for i, e := range due {
		in[i] = peers.Due{Job: e.job.Name, Slot: e.slot, Scheduled: e.origin == OriginScheduled && !e.again, Fallback: e.fallback}
	}
	choices, pruned := l.peers.Prefer(in, now)
	if choices == nil {
		return due
	}
	claim := due[:0]
	var later []*entry
	var told []slotKey
	for i, e := range due {
		switch c := choices[i]; {
		case c.Told:
			// The replica that claimed it records what a stall passed
			// over before it.
			told = append(told, keyOf(e.job.Name, e.slot))
		case !c.Later.IsZero():
			later = append(later, &entry{job: e.job, slot: e.slot, fireAt: c.Later, origin: e.origin, again: true, fallback: true})
		default:
			claim = append(claim, e)
		}
	}
	l.timers.push(later...)
	if len(told) > 0 || pruned {
		l.timers.forgetPassedOver(told, now, peers.SettledKeep, pruned)
	}
	return claim
}
