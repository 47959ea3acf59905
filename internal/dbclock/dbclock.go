// Package dbclock is the clock a replica judges slots by: its own,
// corrected by its measured offset from the database clock, so a replica
// whose clock is minutes off still fires each slot when the database says
// it is due. Timers still run on the replica's clock: only durations are
// taken from it. It also tells when that clock was stepped.
package dbclock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cronfence/cronfence/internal/service"
)

// Clock measures and keeps the offset. Set its exported fields before
// its first use.
type Clock struct {
	*service.Base
	CheckEvery     time.Duration // how often the offset is measured (Config.ClockCheckEvery)
	HeartbeatEvery time.Duration // a registry heartbeat's answer may serve as the check; negative: no heartbeats
	MaxSleep       time.Duration // the loop's longest sleep
	Warning        time.Duration // an offset beyond which a measurement is logged as a warning
	// Measured is told of every offset taken.
	Measured func(time.Duration)
	// Reached is told of every measurement that reached the store: after
	// an outage, the claims' catch-up is due.
	Reached func()

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

// MsgRead is logged when the database clock cannot be read.
const MsgRead = "cronfence: could not read the database clock"

// Now is this replica's clock corrected by its last measured offset.
func (c *Clock) Now() time.Time {
	return c.Clock.Now().Add(-time.Duration(c.offset.Load()))
}

// Measure reads the database clock and takes the offset. The database read
// its clock between the read's sending and its answer, so this clock then
// showed at most its reading at the answer: the offset taken may exceed
// the true one by up to the round trip, never fall short of it, so now is
// never ahead of the database clock and a slot is never claimed before it
// is due. (The middle of the round trip is off by half the difference of
// its legs, and the first leg is the longer: replicas measured themselves
// ahead and had their first claims refused.) Of offsetReads reads the
// fastest is kept; once a full measurement gave the fastest round trip, a
// read within offsetReadSlack of it is enough.
func (c *Clock) Measure(ctx context.Context) {
	ctx, cancel := c.Bounded(ctx)
	defer cancel()
	var offset, best time.Duration
	known, fastest := c.readKnown.Load(), time.Duration(c.bestRead.Load())
	full := true
	for i := range offsetReads {
		sent := c.Clock.Now()
		db, err := c.Store.Now(ctx)
		if err != nil {
			if i == 0 {
				c.WarnRepeated(MsgRead, "error", err)
				return
			}
			break // the reads so far will do
		}
		answered := c.Clock.Now()
		if rtt := answered.Sub(sent); i == 0 || rtt < best {
			offset, best = answered.Sub(db), rtt
		}
		if known && best <= fastest+offsetReadSlack {
			full = false
			break
		}
	}
	c.Failures.Over(MsgRead)
	if c.Reached != nil {
		c.Reached()
	}
	// Only a full measurement sets the yardstick: a read taken as good
	// enough would otherwise let it creep up by the slack each time.
	if full {
		c.bestRead.Store(int64(best))
		c.readKnown.Store(true)
	}
	c.Set(offset)
}

// Set takes a measured offset.
func (c *Clock) Set(offset time.Duration) {
	c.offset.Store(int64(offset))
	if c.Measured != nil {
		c.Measured(offset)
	}
	if offset > c.Warning || offset < -c.Warning {
		c.Log.Warn("cronfence: this replica's clock is off the database clock; the database decides", "offset", offset)
	}
}

// Checked notes a measurement made at now: the next check is a period
// later.
func (c *Clock) Checked(now time.Time) {
	c.mu.Lock()
	c.nextCheck = now.Add(c.CheckEvery)
	c.mu.Unlock()
}

// CheckDue reports whether the tick at now measures the clock itself. A
// step's measurement (step not zero) counts as the period's check. A
// replica that keeps a registry row takes its check from its next
// heartbeat's answer (FromHeartbeat), at most HeartbeatEvery later; when
// none came by then (its heartbeats fail), it reads the clock itself.
func (c *Clock) CheckDue(now time.Time, step time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	viaHeartbeat := c.HeartbeatEvery >= 0 && now.Before(c.nextCheck.Add(c.HeartbeatEvery+c.MaxSleep))
	due := step == 0 && !now.Before(c.nextCheck) && !viaHeartbeat
	if due || step != 0 {
		c.nextCheck = now.Add(c.CheckEvery)
	}
	return due
}

// FromHeartbeat takes the clock check, when due, from a heartbeat's
// answer: the database stamped the row with its clock (db) between sent
// and answered, which bounds the offset as measure's reads do, at no round
// trip of its own. A heartbeat much slower than a clock read (a large row,
// a busy pool) would bound it loosely enough to fire slots late: then the
// clock is read instead.
func (c *Clock) FromHeartbeat(ctx context.Context, now, sent, answered, db time.Time) {
	c.mu.Lock()
	due := !now.Before(c.nextCheck)
	if due {
		c.nextCheck = now.Add(c.CheckEvery)
	}
	c.mu.Unlock()
	if !due {
		return
	}
	if rtt := answered.Sub(sent); rtt > 2*time.Duration(c.bestRead.Load())+heartbeatClockSlack {
		c.Measure(ctx)
		return
	}
	c.Set(answered.Sub(db))
}

// Step returns how far this replica's clock was stepped while the loop
// slept for wait from slept: timers run on the monotonic clock, which an
// NTP step, a resumed VM or date -s does not move, so the wall clock's
// movement should equal the wait. Zero when it (nearly) does; a timer that
// fires late reads as a small forward step, which costs one measurement.
func (c *Clock) Step(slept time.Time, wait time.Duration) time.Duration {
	moved := c.Clock.Now().Round(0).Sub(slept.Round(0)) // wall clock only
	if step := moved - wait; step > clockStepThreshold || step < -clockStepThreshold {
		return step
	}
	return 0
}

// Offset is the last measured offset of this clock from the database clock
// (positive: this clock is ahead), at most a round trip more than the true
// one.
func (c *Clock) Offset() time.Duration { return time.Duration(c.offset.Load()) }
