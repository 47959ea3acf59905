package cronfence

import (
	"sync"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/internal/wait"
)

// exactClock is the cluster clock with the real clock's SleepExactly: a
// sleep moves the fake time on by its length, and is recorded.
type exactClock struct {
	*clock.Fake
	mu    sync.Mutex
	until []time.Time // where each exact sleep ended
}

func (e *exactClock) SleepExactly(d time.Duration) {
	e.Advance(d)
	e.mu.Lock()
	e.until = append(e.until, e.Now())
	e.mu.Unlock()
}

func (e *exactClock) sleptUntil(t time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, u := range e.until {
		if u.Equal(t) {
			return true
		}
	}
	return false
}

// TestLoopSleepsTheLastMomentsBeforeAFireExactly: a real timer wakes up to
// a millisecond late (the Go runtime waits for timers in whole
// milliseconds), and every claim of the slot with it. On a clock that can
// sleep exactly (clock.Real), the loop sets its timer clock.TimerSlack
// before the fire and sleeps the rest exactly; here a fake clock records
// that sleep, which must end on the slot's instant, where the slot then
// runs.
func TestLoopSleepsTheLastMomentsBeforeAFireExactly(t *testing.T) {
	// 300 ms past the second, so the wait for the fire (not MaxSleep's)
	// ends on the slot.
	start := time.Date(2026, 3, 1, 12, 0, 0, 300_000_000, time.UTC)
	eachStoreFrom(t, start, func(t *testing.T, c *cluster) {
		ec := &exactClock{Fake: c.db}
		l := newLedger()
		c.startWith(Config{Owner: "a", Clock: ec, Retention: -1, HeartbeatEvery: -1},
			Job{Name: "ten", Schedule: "*/10 * * * * *", Handler: l.handler(c.db)})
		slot := time.Date(2026, 3, 1, 12, 0, 10, 0, time.UTC)
		// To the timer's deadline, TimerSlack before the slot, and no
		// further: the loop's own sleep takes the clock the rest of the
		// way.
		c.advance(slot.Add(-clock.TimerSlack).Sub(c.db.Now()), time.Second)
		wait.For(t, 10*time.Second, func() bool { return l.ran("ten", slot) == 1 }, func() string {
			return "the slot did not run"
		})
		if !ec.sleptUntil(slot) {
			t.Fatalf("no exact sleep ended on the slot (%s); the loop's exact sleeps ended at %v", slot, ec.until)
		}
		l.wantNoneTwiceOrEarly(t)
	})
}
