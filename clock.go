package cronfence

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// dbClock is the clock a replica judges slots by: its own, corrected by its
// measured offset from the database clock, so a replica whose clock is
// minutes off still fires each slot when the database says it is due.
// Timers still run on Config.Clock: only durations are taken from it.
type dbClock struct {
	e *env
	// reached is told of every measurement that reached the store: after
	// an outage, the claims' catch-up is due (claimer.storeUp).
	reached func()

	offset atomic.Int64 // this clock minus the database clock, in ns
	// bestRead is the round trip of the last full measurement's fastest
	// read, in ns, once readKnown.
	bestRead  atomic.Int64
	readKnown atomic.Bool

	mu        sync.Mutex
	nextCheck time.Time // the next clock check, on this clock
}

// offsetReads is how many times a measurement reads the database clock:
// the read with the shortest round trip bounds the offset most tightly.
const offsetReads = 3

// offsetReadSlack is how much slower than the last full measurement's
// fastest read a read may be and still end the measurement: each further
// read is a statement, sent by every replica at every check.
const offsetReadSlack = time.Millisecond

// heartbeatClockSlack is how much slower than the last clock read a
// heartbeat may be for its answer to serve as the clock check.
const heartbeatClockSlack = 5 * time.Millisecond

// clockStepThreshold is how far this replica's clock may move away from a
// timer's wait before the loop takes it for a step of the clock.
const clockStepThreshold = time.Second

const msgClockRead = "cronfence: could not read the database clock"

// now is this replica's clock corrected by its last measured offset.
func (c *dbClock) now() time.Time {
	return c.e.cfg.Clock.Now().Add(-time.Duration(c.offset.Load()))
}

// measure reads the database clock and takes the offset. The database read
// its clock between the read's sending and its answer, so this clock then
// showed at most its reading at the answer: the offset taken may exceed
// the true one by up to the round trip, never fall short of it, so now is
// never ahead of the database clock and a slot is never claimed before it
// is due. (The middle of the round trip is off by half the difference of
// its legs, and the first leg is the longer: replicas measured themselves
// ahead and had their first claims refused.) Of offsetReads reads the
// fastest is kept; once a full measurement gave the fastest round trip, a
// read within offsetReadSlack of it is enough.
func (c *dbClock) measure(ctx context.Context) {
	e := c.e
	ctx, cancel := e.bounded(ctx)
	defer cancel()
	var offset, best time.Duration
	known, fastest := c.readKnown.Load(), time.Duration(c.bestRead.Load())
	full := true
	for i := range offsetReads {
		sent := e.cfg.Clock.Now()
		db, err := e.store.Now(ctx)
		if err != nil {
			if i == 0 {
				e.warnRepeated(msgClockRead, "error", err)
				return
			}
			break // the reads so far will do
		}
		answered := e.cfg.Clock.Now()
		if rtt := answered.Sub(sent); i == 0 || rtt < best {
			offset, best = answered.Sub(db), rtt
		}
		if known && best <= fastest+offsetReadSlack {
			full = false
			break
		}
	}
	e.failures.over(msgClockRead)
	if c.reached != nil {
		c.reached()
	}
	// Only a full measurement sets the yardstick: a read taken as good
	// enough would otherwise let it creep up by the slack each time.
	if full {
		c.bestRead.Store(int64(best))
		c.readKnown.Store(true)
	}
	c.set(offset)
}

// set takes a measured offset.
func (c *dbClock) set(offset time.Duration) {
	c.offset.Store(int64(offset))
	c.e.observe(ClockOffsetEvent{Offset: offset})
	if offset > ClockOffsetWarning || offset < -ClockOffsetWarning {
		c.e.log.Warn("cronfence: this replica's clock is off the database clock; the database decides", "offset", offset)
	}
}

// checked notes a measurement made at now: the next check is a period
// later.
func (c *dbClock) checked(now time.Time) {
	c.mu.Lock()
	c.nextCheck = now.Add(c.e.cfg.ClockCheckEvery)
	c.mu.Unlock()
}

// checkDue reports whether the tick at now measures the clock itself. A
// step's measurement (step not zero) counts as the period's check. A
// replica that keeps a registry row takes its check from its next
// heartbeat's answer (fromHeartbeat), at most HeartbeatEvery later; when
// none came by then (its heartbeats fail), it reads the clock itself.
func (c *dbClock) checkDue(now time.Time, step time.Duration) bool {
	cfg := &c.e.cfg
	c.mu.Lock()
	defer c.mu.Unlock()
	viaHeartbeat := c.e.registers() && now.Before(c.nextCheck.Add(cfg.HeartbeatEvery+cfg.MaxSleep))
	due := step == 0 && !now.Before(c.nextCheck) && !viaHeartbeat
	if due || step != 0 {
		c.nextCheck = now.Add(cfg.ClockCheckEvery)
	}
	return due
}

// fromHeartbeat takes the clock check, when due, from a heartbeat's
// answer: the database stamped the row with its clock (db) between sent
// and answered, which bounds the offset as measure's reads do, at no round
// trip of its own. A heartbeat much slower than a clock read (a large row,
// a busy pool) would bound it loosely enough to fire slots late: then the
// clock is read instead.
func (c *dbClock) fromHeartbeat(ctx context.Context, now, sent, answered, db time.Time) {
	c.mu.Lock()
	due := !now.Before(c.nextCheck)
	if due {
		c.nextCheck = now.Add(c.e.cfg.ClockCheckEvery)
	}
	c.mu.Unlock()
	if !due {
		return
	}
	if rtt := answered.Sub(sent); rtt > 2*time.Duration(c.bestRead.Load())+heartbeatClockSlack {
		c.measure(ctx)
		return
	}
	c.set(answered.Sub(db))
}

// step returns how far this replica's clock was stepped while the loop
// slept for wait from slept: timers run on the monotonic clock, which an
// NTP step, a resumed VM or date -s does not move, so the wall clock's
// movement should equal the wait. Zero when it (nearly) does; a timer that
// fires late reads as a small forward step, which costs one measurement.
func (c *dbClock) step(slept time.Time, wait time.Duration) time.Duration {
	moved := c.e.cfg.Clock.Now().Round(0).Sub(slept.Round(0)) // wall clock only
	if step := moved - wait; step > clockStepThreshold || step < -clockStepThreshold {
		return step
	}
	return 0
}

// latest is the later of a and b.
func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
