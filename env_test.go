package cronfence

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/store"
)

// A replica whose clock is minutes off fires each slot when the database
// says it is due: it arms from the database's now, so a replica alone with
// its clock ahead still runs every slot from its start on (it used to wait
// for its own clock, leaving minutes of slots to others), and one behind
// does not run slots minutes late. The claims it sends are never early.
func TestSkewedReplicaFiresOnTheDatabaseClock(t *testing.T) {
	t.Parallel()
	for _, offset := range []time.Duration{2 * time.Minute, -2 * time.Minute} {
		t.Run(fmt.Sprint(offset), func(t *testing.T) {
			eachStore(t, func(t *testing.T, c *cluster) {
				l := newLedger()
				var notDue atomic.Int64
				obs := ObserverFunc(func(e Event) {
					if ce, ok := e.(ClaimEvent); ok && ce.Refusal == store.ClaimNotDue {
						notDue.Add(1)
					}
				})
				job := Job{Name: "fast", Schedule: "*/5 * * * * *", Handler: l.handler(c.db)}
				start := c.db.Now()
				c.startWith(Config{Owner: "skewed", Clock: offsetClock{c.db, offset}, Retention: -1, Observer: obs}, job)
				c.advance(time.Minute, time.Second)
				l.wantEachOnce(t, "fast", start.Add(5*time.Second), start.Add(time.Minute+time.Second), 5*time.Second)
				if n := notDue.Load(); n != 0 {
					t.Fatalf("%d claims refused as not due: the replica fired on its own clock", n)
				}
			})
		})
	}
}

// The measured offset never puts a replica ahead of the database clock,
// however uneven the round trip of the clock read: slots are judged due by
// the database, and a replica that fires early only has its claim refused
// not_due and fires again later. The replica and the database here share one
// clock, so the true offset is 0; the read's first leg takes 8 ms, its
// second 0.2 ms (taking the middle of the round trip as the instant the
// database read its clock put this replica 3.9 ms ahead, and every slot
// fired early).
func TestMeasuredOffsetNeverFiresEarly(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		var notDue atomic.Int64
		obs := ObserverFunc(func(e Event) {
			if ce, ok := e.(ClaimEvent); ok && ce.Refusal == store.ClaimNotDue {
				notDue.Add(1)
			}
		})
		// The store's clock reads take the time a real one does,
		// unevenly: the leg before the database reads its clock (a pooled
		// connection handed out, a statement prepared, the request sent)
		// takes legBefore, the leg after it (the answer back) legAfter.
		// The test's one clock moves while it waits, as the real clock
		// would.
		const legBefore, legAfter = 8 * time.Millisecond, 200 * time.Microsecond
		st := intercept(c.open(t))
		st.before = func(call *call) {
			if call.method == "Now" {
				c.db.Advance(legBefore)
			}
		}
		st.after = func(call *call) {
			if call.method == "Now" {
				c.db.Advance(legAfter)
			}
		}
		l := newLedger()
		start := c.db.Now().Add(time.Second - 50*time.Millisecond) // 50 ms before a slot
		c.db.Advance(start.Sub(c.db.Now()))
		s := c.startWith(Config{Owner: "a", Store: st, Clock: offsetClock{c.db, 0}, Retention: -1, Observer: obs},
			Job{Name: "tick", Schedule: "* * * * * *", Handler: l.handler(c.db)})
		if ahead := s.e.Now().Sub(c.db.Now()); ahead > 0 {
			t.Errorf("after measuring its offset (%s) the replica judges slots by a clock %s ahead of the database's", s.ClockOffset(), ahead)
		}
		if off := s.ClockOffset(); off < 0 || off > legAfter+legBefore {
			t.Errorf("measured offset %s; want 0 up to the read's round trip %s", off, legAfter+legBefore)
		}
		// In steps of a millisecond, so a fire a few milliseconds early
		// reaches the database before the slot does.
		c.advance(2*time.Second, time.Millisecond)
		l.wantEachOnce(t, "tick", start.Truncate(time.Second).Add(time.Second), c.db.Now().Truncate(time.Second).Add(time.Second), time.Second)
		if n := notDue.Load(); n != 0 {
			t.Errorf("%d claims refused not due: the replica fired before the database clock reached the slot", n)
		}
	})
}

// The clock check costs no statement of its own while heartbeats answer
// (the database stamps the heartbeat's row with its clock), and still
// happens when they do not, at one read a check once the first
// measurement knows how quick a read is.
func TestClockCheckRidesOnTheHeartbeat(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		for _, fail := range []bool{false, true} {
			// The store counts its clock reads and, with fail, refuses
			// heartbeats.
			cr := intercept(c.open(t))
			cr.before = func(call *call) {
				if fail && call.method == "ReplicaHeartbeat" {
					call.err = errors.New("heartbeat refused")
				}
			}
			var offsets atomic.Int64
			observe := ObserverFunc(func(e Event) {
				if _, ok := e.(ClockOffsetEvent); ok {
					offsets.Add(1)
				}
			})
			s := c.startWith(Config{Owner: "a", Store: cr, Clock: offsetClock{c.db, 0}, Retention: -1, CheckEvery: -1, Observer: observe},
				Job{Name: "never", Schedule: "0 0 1 1 *", Handler: func(context.Context, *Run) error { return nil }})
			before, measuredBefore := int64(cr.count("Now")), offsets.Load()
			c.advance(5*time.Minute, time.Second)
			reads, measured := int64(cr.count("Now"))-before, offsets.Load()-measuredBefore
			c.stop(s)
			switch {
			case !fail && (reads != 0 || measured < 4):
				t.Errorf("heartbeats answering: %d clock reads and %d measurements in 5 minutes; want none and one a minute", reads, measured)
			case fail && (measured < 4 || reads != measured):
				// The first measurement, at start, read the clock
				// offsetReads times; the later ones, as quick (the
				// test's clock does not move during a read), once.
				t.Errorf("heartbeats refused: %d clock reads and %d measurements in 5 minutes; want the clock read once a minute", reads, measured)
			}
		}
	})
}

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

// Replica clocks 90 s ahead and behind: the database clock decides, so no
// slot runs early and none twice. Replicas up to 2 s late with a fast job
// are the failure of designs that release a lock at the end of a run.
func TestSkewedClocksNeitherEarlyNorTwice(t *testing.T) {
	t.Parallel()
	for _, offsets := range [][]time.Duration{
		{0, 90 * time.Second, -90 * time.Second},
		{0, -time.Second, -2 * time.Second},
	} {
		t.Run(fmt.Sprint(offsets), func(t *testing.T) {
			eachStore(t, func(t *testing.T, c *cluster) {
				l := newLedger()
				job := Job{Name: "fast", Schedule: "*/5 * * * * *", Handler: l.handler(c.db)}
				start := c.db.Now()
				for i, off := range offsets {
					c.start(fmt.Sprintf("replica-%d", i), off, job)
				}
				c.advance(3*time.Minute, time.Second)
				// Nothing ran early or twice, whatever the clocks. Once the
				// replicas behind have caught up with the slots the others
				// already ran (their first 90 s fire slots from before the
				// cluster existed), every slot runs exactly once.
				l.wantNoneTwiceOrEarly(t)
				c.wantNeverDown()
				for slot := start.Add(100 * time.Second); !slot.After(start.Add(3 * time.Minute)); slot = slot.Add(5 * time.Second) {
					if n := l.ran("fast", slot); n != 1 {
						t.Fatalf("slot %s ran %d times, want once", slot.Format(time.TimeOnly), n)
					}
				}
			})
		})
	}
}
