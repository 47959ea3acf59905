package cronfence

import (
	"fmt"
	"time"

	"github.com/cronfence/cronfence/store"
)

// drive is a backfill this replica drives.
type drive struct {
	b     store.Backfill // as last written: its cursor and counts
	job   *registered
	lease store.Lease
	// rows is a page of the range's slot rows, by slot, read from the
	// cursor up to pageEnd (exclusive).
	rows    map[int64]store.Slot
	pageEnd time.Time
	// unwritten is how many slots were handled since the progress was
	// last written.
	unwritten int
	lastStart time.Time // of the last run it claimed, by the scheduler's clock, for Rate
	// pausedNow is whether the job was paused when last read, at pausedAt
	// (the scheduler's clock; zero before the first read).
	pausedNow bool
	pausedAt  time.Time
	done      bool // ended here, cancelled or lost: handle nothing more
}

// ref is d's lease.
func (d *drive) ref() store.LeaseRef {
	return store.LeaseRef{Name: d.lease.Name, Owner: d.lease.Owner, Generation: d.lease.Generation}
}

// after is the instant the walk goes on after: the cursor, or just before
// the range.
func (d *drive) after() time.Time {
	if d.b.Cursor.IsZero() {
		return d.b.From.Add(-time.Nanosecond)
	}
	return d.b.Cursor
}

// What a backfill counts besides the outcomes read ahead (planOutcome).
const (
	countRan       = "ran"        // run by the backfill, completed
	countRanFailed = "ran_failed" // run by the backfill, failed
	countTaken     = "taken"      // claimed meanwhile by another run
)

// count counts slot as what, an outcome or one of the counts above, and
// moves the cursor to it.
func (d *drive) count(what string, slot time.Time) {
	c := &d.b.Counts
	switch what {
	case countRan:
		c.Ran++
	case countRanFailed:
		c.Failed++
	case BackfillCompleted:
		c.Completed++
	case BackfillFailed:
		c.FailedBefore++
	case BackfillSkipped:
		c.Skipped++
	case BackfillRunning:
		c.Running++
	case BackfillPaused:
		c.Paused++
	case BackfillExcluded:
		c.Excluded++
	case countTaken:
		c.Taken++
	default:
		panic(fmt.Sprintf("cronfence: backfill count %q", what))
	}
	d.b.Cursor = slot
	d.unwritten++
}

// rateWait is how long after now the next start waits for the
// backfill's rate.
func (d *drive) rateWait(now time.Time) time.Duration {
	if d.b.Rate <= 0 || d.lastStart.IsZero() {
		return 0
	}
	return d.lastStart.Add(time.Second / time.Duration(d.b.Rate)).Sub(now)
}
