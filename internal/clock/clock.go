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

// TimerSlack is how late a timer of this process may fire on an idle host:
// the Go runtime waits for its timers in whole milliseconds, so one fires
// up to a millisecond after its deadline (0.6 ms at the median, 1.1 ms at
// the 99th percentile, measured on Linux). A caller that must act at an
// instant sets its timer this much early and sleeps the rest exactly
// (Real.SleepExactly).
const TimerSlack = 1500 * time.Microsecond

// SleepExactly sleeps for d on the kernel's high-resolution timer, which
// wakes within tens of µs of the deadline, rather than on the runtime's
// timers. It blocks the calling goroutine's thread, so it is for the last
// moments before an instant: d is cut to TimerSlack.
func (Real) SleepExactly(d time.Duration) {
	sleepExactly(min(d, TimerSlack))
}

// AfterFunc is time.AfterFunc on c: f runs on a goroutine of its own once d
// passes, unless stop (called once) comes first.
func AfterFunc(c Clock, d time.Duration, f func()) (stop func()) {
	timer := c.NewTimer(d)
	done := make(chan struct{})
	go func() {
		select {
		case <-timer.C():
			f()
		case <-done:
		}
	}()
	return func() {
		timer.Stop()
		close(done)
	}
}
