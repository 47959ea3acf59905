package cronfence

import (
	"slices"
	"sync"
	"time"
)

// catchUpWaitEvery is how often a catch-up of policy all claims again a
// slot whose job's lease another run holds.
const catchUpWaitEvery = time.Second

// catchUpQueues are, by job, the slots that catch-up of policy all
// (CatchUpAll) still means to claim on this replica, oldest first. Each
// job's first slot is in flight: being claimed, run, or waiting for the
// job's lease. The next is claimed only once it is settled (run, or
// refused for good), so a job's missed slots run one after another, oldest
// first, never overlapping; every replica works through the same slots,
// and the store lets each run once.
type catchUpQueues struct {
	mu    sync.Mutex
	byJob map[string]*catchUpQueue
}

type catchUpQueue struct {
	job   *registered
	slots []time.Time // oldest first; slots[0] is in flight
}

// add queues slots (oldest first) of r and returns the entry to claim now:
// the first of them, or nil when r's queue has a slot in flight already,
// into which they are merged. A queue of an earlier version of the job (a
// stored schedule edited since) is replaced.
func (q *catchUpQueues) add(r *registered, slots []time.Time) *entry {
	if len(slots) == 0 {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if cur := q.byJob[r.Name]; cur != nil && cur.job == r {
		merged := append(slices.Clone(cur.slots), slots...)
		slices.SortFunc(merged, time.Time.Compare)
		cur.slots = slices.CompactFunc(merged, time.Time.Equal)
		return nil
	}
	if q.byJob == nil {
		q.byJob = map[string]*catchUpQueue{}
	}
	q.byJob[r.Name] = &catchUpQueue{job: r, slots: slots}
	return catchUpEntry(r, slots[0])
}

// settled notes that r's slot is settled and returns the entry of its next
// slot, or nil when none is left.
func (q *catchUpQueues) settled(r *registered, slot time.Time) *entry {
	q.mu.Lock()
	defer q.mu.Unlock()
	cur := q.byJob[r.Name]
	if cur == nil || cur.job != r {
		return nil
	}
	n := 0
	for n < len(cur.slots) && !cur.slots[n].After(slot) {
		n++
	}
	cur.slots = cur.slots[n:]
	if len(cur.slots) == 0 {
		delete(q.byJob, r.Name)
		return nil
	}
	return catchUpEntry(r, cur.slots[0])
}

// drop forgets r's queue, returning its latest slot (zero when none): its
// slot in flight could not be claimed (the store is down), and catch-up
// after the outage looks at them again.
func (q *catchUpQueues) drop(name string) time.Time {
	q.mu.Lock()
	defer q.mu.Unlock()
	cur := q.byJob[name]
	if cur == nil {
		return time.Time{}
	}
	delete(q.byJob, name)
	return cur.slots[len(cur.slots)-1]
}

func catchUpEntry(r *registered, slot time.Time) *entry {
	return &entry{job: r, slot: slot, origin: OriginCatchUp}
}
