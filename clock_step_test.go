package cronfence

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/store"
)

// steppingClock is the cluster clock seen by a replica whose own clock is
// stepped while it runs (an NTP step, a VM resumed, an operator's date -s):
// its offset from the database clock changes at once. Timers run on the
// cluster clock, as a real timer runs on the monotonic clock, which a step
// does not move.
type steppingClock struct {
	base   *clock.Fake
	offset *atomic.Int64 // ns
}

func (s steppingClock) Now() time.Time {
	return s.base.Now().Add(time.Duration(s.offset.Load()))
}
func (s steppingClock) NewTimer(d time.Duration) clock.Timer { return s.base.NewTimer(d) }

// claimCounter counts a replica's refused claims by reason.
type claimCounter struct{ notDue atomic.Int64 }

func (c *claimCounter) Observe(e Event) {
	if ce, ok := e.(ClaimEvent); ok && ce.Refusal == store.ClaimNotDue {
		c.notDue.Add(1)
	}
}

// TestClockStepsAreFollowedAtOnce: a replica's clock is stepped by +2 and
// then by -2 minutes while it runs, the database clock unchanged. It notices
// each step at its next wake-up (a timer's wait and the clock's movement
// disagree), measures its offset from the database clock again and goes on
// judging slots by the database: every slot due by the database clock runs
// once, none early, and the step costs no burst of claims refused as not
// yet due. (Before: after +2 minutes it fired slots two minutes early, each
// refused and retried, and ran nothing until its next clock check; after
// -2 minutes it ran nothing until its stale clock caught up.)
func TestClockStepsAreFollowedAtOnce(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		l := newLedger()
		job := Job{Name: "ten", Schedule: "*/10 * * * * *", Handler: l.handler(c.db)}
		var offset atomic.Int64
		refused := &claimCounter{}
		c.startWith(Config{Owner: "a", Clock: steppingClock{c.db, &offset}, Retention: -1, Observer: refused}, job)
		from := c.db.Now().Add(10 * time.Second)
		c.advance(time.Minute, time.Second)
		offset.Store(int64(2 * time.Minute)) // stepped ahead
		c.advance(time.Minute, time.Second)
		offset.Store(0) // stepped back
		c.advance(time.Minute, time.Second)
		l.wantEachOnce(t, "ten", from, c.db.Now().Add(time.Second), 10*time.Second)
		if n := refused.notDue.Load(); n > 2 {
			t.Fatalf("%d claims refused as not yet due around the steps; want at most 2", n)
		}
	})
}
