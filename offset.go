package cronfence

import (
	"context"
	"time"
)

// The clock slots are judged by: this replica's, corrected by its measured
// offset from the database clock.

// offsetReads is how many times measureOffset reads the database clock:
// the read with the shortest round trip bounds the offset most tightly.
const offsetReads = 3

// offsetReadSlack is how much slower than the last full measurement's
// fastest read a read may be and still end the measurement: the bound it
// gives is that much looser, and a timer's claim, sent claimLeadReal
// before its slot and waiting for it in the database, starts on time all
// the same. Each further read is a statement of its own, sent by every
// replica at every clock check (ten replicas sent a third of their
// statements so on a machine whose heartbeats were too slow to serve).
const offsetReadSlack = time.Millisecond

const msgClockRead = "cronfence: could not read the database clock"

// measureOffset measures this clock against the database clock and warns
// when they are more than ClockOffsetWarning apart.
//
// The database read its clock at some instant between the read's sending
// and its answer, so this clock then showed at most its reading at the
// answer: that reading minus the database's is the offset taken. It may
// exceed the true offset by up to the round trip, never fall short of it,
// so scheduleNow is never ahead of the database clock: a slot is fired at,
// or at most a round trip after, the instant the database judges it due,
// and its claim is not refused not_due. (The middle of the round trip, taken
// before, is off by half the difference of its two legs; the first leg is
// the longer, with a pooled connection to hand out or a statement to
// prepare, and replicas measured themselves 2 to 8 ms ahead of a database
// on their own host, fired early, and had most first claims refused.) Of
// offsetReads reads, the one with the shortest round trip is kept; once
// a full measurement gave the fastest read's round trip, a read within
// offsetReadSlack of it is enough.
func (s *Scheduler) measureOffset(ctx context.Context) {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	var offset, best time.Duration
	known, fastest := s.clockReadKnown.Load(), time.Duration(s.bestClockRead.Load())
	full := true
	for i := range offsetReads {
		sent := s.cfg.Clock.Now()
		db, err := s.store.Now(ctx)
		if err != nil {
			if i == 0 {
				s.warnRepeated(msgClockRead, "error", err)
				return
			}
			break // the reads so far will do
		}
		answered := s.cfg.Clock.Now()
		if rtt := answered.Sub(sent); i == 0 || rtt < best {
			offset, best = answered.Sub(db), rtt
		}
		if known && best <= fastest+offsetReadSlack {
			full = false
			break
		}
	}
	s.failures.over(msgClockRead)
	s.storeUp()
	// Only a full measurement sets the yardstick: a read taken as good
	// enough would otherwise let it creep up by the slack each time.
	if full {
		s.bestClockRead.Store(int64(best))
		s.clockReadKnown.Store(true)
	}
	s.setOffset(offset)
}

// setOffset takes a measured offset.
func (s *Scheduler) setOffset(offset time.Duration) {
	s.offset.Store(int64(offset))
	s.observe(ClockOffsetEvent{Offset: offset})
	if offset > ClockOffsetWarning || offset < -ClockOffsetWarning {
		s.log.Warn("cronfence: this replica's clock is off the database clock; the database decides", "offset", offset)
	}
}

// heartbeatClockSlack is how much slower than the last clock read a
// heartbeat may be for its answer to serve as the clock check.
const heartbeatClockSlack = 5 * time.Millisecond

// clockFromHeartbeat takes the clock check, when due, from a heartbeat's
// answer: the database stamped the row with its clock between sent and
// answered, which bounds the offset as measureOffset's reads do, at no
// round trip of its own. The bound is looser by what the heartbeat's
// statement does after its stamp (a fraction of a millisecond; taking a
// connection and sending the row come before it, so the round trip
// overstates it). A heartbeat slower than twice the last clock read plus
// heartbeatClockSlack (a large registry row, a busy pool) could bound it
// loosely enough to fire slots late by as much: measureOffset reads the
// clock instead.
func (s *Scheduler) clockFromHeartbeat(ctx context.Context, now, sent, answered, db time.Time) {
	s.mu.Lock()
	due := !now.Before(s.nextClockCheck)
	if due {
		s.nextClockCheck = now.Add(s.cfg.ClockCheckEvery)
	}
	s.mu.Unlock()
	if !due {
		return
	}
	if rtt := answered.Sub(sent); rtt > 2*time.Duration(s.bestClockRead.Load())+heartbeatClockSlack {
		s.measureOffset(ctx)
		return
	}
	s.setOffset(answered.Sub(db))
}

// scheduleNow is the time slots are judged by: this replica's clock
// corrected by its last measured offset from the database clock, so a
// replica whose clock is minutes off still fires each slot when the
// database says it is due (neither early, to be refused as not due, nor
// late) and arms from the database's now at start-up. Timers still run on
// Clock: only durations are taken from it.
func (s *Scheduler) scheduleNow() time.Time {
	return s.cfg.Clock.Now().Add(-time.Duration(s.offset.Load()))
}

// ClockOffset returns the last measured offset of this replica's clock from
// the database clock (positive: this clock is ahead). It is an upper bound:
// at most one round trip to the database more than the true offset.
func (s *Scheduler) ClockOffset() time.Duration { return time.Duration(s.offset.Load()) }
