package clock

import "time"

// Offset is a Clock that reads another clock shifted by a fixed amount:
// Now is Base.Now() + By. Timers are unchanged, since a duration does not
// depend on where the clock reads. It exists to model a host whose clock is
// wrong (chaos tests start a replica minutes off); the database clock, which
// judges every lease and claim, is not affected.
type Offset struct {
	// Base is the clock being shifted. Nil means Real.
	Base Clock
	// By is added to every reading; negative runs the clock behind.
	By time.Duration
}

// Now returns Base.Now() shifted by By.
func (o Offset) Now() time.Time { return o.base().Now().Add(o.By) }

// NewTimer returns Base's timer for d: a wait lasts as long however far off
// the reading is.
func (o Offset) NewTimer(d time.Duration) Timer { return o.base().NewTimer(d) }

func (o Offset) base() Clock {
	if o.Base == nil {
		return Real{}
	}
	return o.Base
}
