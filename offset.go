package cronfence

import (
	"context"
	"time"
)

// The clock slots are judged by: this replica's, corrected by its measured
// offset from the database clock.

// measureOffset measures this clock against the database clock, halving the
// round trip, and warns when they are more than ClockOffsetWarning apart.
func (s *Scheduler) measureOffset(ctx context.Context) {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	before := s.cfg.Clock.Now()
	db, err := s.store.Now(ctx)
	if err != nil {
		s.log.Warn("cronfence: could not read the database clock", "error", err)
		return
	}
	s.storeUp()
	after := s.cfg.Clock.Now()
	offset := before.Add(after.Sub(before) / 2).Sub(db)
	s.offset.Store(int64(offset))
	s.observe(ClockOffsetEvent{Offset: offset})
	if offset > ClockOffsetWarning || offset < -ClockOffsetWarning {
		s.log.Warn("cronfence: this replica's clock is off the database clock; the database decides", "offset", offset)
	}
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
// the database clock (positive: this clock is ahead).
func (s *Scheduler) ClockOffset() time.Duration { return time.Duration(s.offset.Load()) }
