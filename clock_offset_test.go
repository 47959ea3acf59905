package cronfence

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

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
