package cronfence

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// clockReads is a store that counts its clock reads and can refuse
// heartbeats.
type clockReads struct {
	store.Store
	reads         atomic.Int64
	failHeartbeat bool
}

func (c *clockReads) Now(ctx context.Context) (time.Time, error) {
	c.reads.Add(1)
	return c.Store.Now(ctx)
}

func (c *clockReads) ReplicaHeartbeat(ctx context.Context, r store.Replica) (store.Replica, error) {
	if c.failHeartbeat {
		return store.Replica{}, errors.New("heartbeat refused")
	}
	return c.Store.ReplicaHeartbeat(ctx, r)
}

// The clock check costs no statement of its own while heartbeats answer
// (the database stamps the heartbeat's row with its clock), and still
// happens when they do not, at one read a check once the first
// measurement knows how quick a read is.
func TestClockCheckRidesOnTheHeartbeat(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		for _, fail := range []bool{false, true} {
			cr := &clockReads{Store: c.open(t), failHeartbeat: fail}
			var offsets atomic.Int64
			observe := ObserverFunc(func(e Event) {
				if _, ok := e.(ClockOffsetEvent); ok {
					offsets.Add(1)
				}
			})
			s := c.startWith(Config{Owner: "a", Store: cr, Clock: offsetClock{c.db, 0}, Retention: -1, CheckEvery: -1, Observer: observe},
				Job{Name: "never", Schedule: "0 0 1 1 *", Handler: func(context.Context, *Run) error { return nil }})
			before, measuredBefore := cr.reads.Load(), offsets.Load()
			c.advance(5*time.Minute, time.Second)
			reads, measured := cr.reads.Load()-before, offsets.Load()-measuredBefore
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
