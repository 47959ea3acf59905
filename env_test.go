package cronfence

import (
	"context"
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

// slowClockRead is a store whose clock reads take the time a real one
// does, unevenly: the leg before the database reads its clock (a pooled
// connection handed out, a statement prepared, the request sent) takes
// before, the leg after it (the answer back) after. The test's one clock
// moves while it waits, as the real clock would.
type slowClockRead struct {
	store.Store
	clock         *clock.Fake
	before, after time.Duration
}

func (s *slowClockRead) Now(ctx context.Context) (time.Time, error) {
	s.clock.Advance(s.before)
	now, err := s.Store.Now(ctx)
	s.clock.Advance(s.after)
	return now, err
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
		st := &slowClockRead{Store: c.open(t), clock: c.db, before: 8 * time.Millisecond, after: 200 * time.Microsecond}
		l := newLedger()
		start := c.db.Now().Add(time.Second - 50*time.Millisecond) // 50 ms before a slot
		c.db.Advance(start.Sub(c.db.Now()))
		s := c.startWith(Config{Owner: "a", Store: st, Clock: offsetClock{c.db, 0}, Retention: -1, Observer: obs},
			Job{Name: "tick", Schedule: "* * * * * *", Handler: l.handler(c.db)})
		if ahead := s.e.Now().Sub(c.db.Now()); ahead > 0 {
			t.Errorf("after measuring its offset (%s) the replica judges slots by a clock %s ahead of the database's", s.ClockOffset(), ahead)
		}
		if off := s.ClockOffset(); off < 0 || off > st.after+st.before {
			t.Errorf("measured offset %s; want 0 up to the read's round trip %s", off, st.after+st.before)
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
