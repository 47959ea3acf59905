// Package clock lets code that waits on time be driven by tests: production
// uses Real, tests use a Fake they advance by hand, so no test sleeps
// waiting for a timer.
package clock

import "time"

// Clock tells the time and makes timers.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer that cronfence uses.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
}

// Real is the process clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// NewTimer returns a real timer.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }
