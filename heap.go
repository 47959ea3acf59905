package cronfence

import (
	"container/heap"
	"time"
)

// entry is one job in the scheduler's timer heap.
type entry struct {
	job    *registered
	slot   time.Time // the slot to claim when the entry fires
	fireAt time.Time // when to fire, on the scheduler's clock: the slot (less the claim's lead), or a retry
	// origin is why the slot is claimed. On the heap it is
	// OriginScheduled, or OriginCatchUp for a catch-up tried again: that is
	// claimed and run as a catch-up, and given up only past the job's
	// catch-up window.
	origin Origin
	// attempt is, for OriginRetry, the failed attempt the entry retries
	// (store.SlotClaimParams.RetryOf). An int32 fits the struct's padding.
	attempt int32
	retry   bool // a slot tried again (not yet due, or its lease busy); its job was re-armed when it first fired
	busy    bool // a retry of a slot whose lease a deposed writer still held: its alert is raised
	// fallback is a retry of a slot another replica is preferred for
	// (notices.go): dropped when that one's claim was told.
	fallback bool
	// No heap index: nothing fixes or removes an entry in place, and
	// without one an entry takes 80 bytes instead of 96 (one per job).
}

// timers is a min-heap of entries by fireAt: one heap for all jobs, so a
// replica with many jobs wakes once per distinct instant.
type timers []*entry

func (t timers) Len() int           { return len(t) }
func (t timers) Less(i, j int) bool { return t[i].fireAt.Before(t[j].fireAt) }
func (t timers) Swap(i, j int)      { t[i], t[j] = t[j], t[i] }
func (t *timers) Push(x any)        { *t = append(*t, x.(*entry)) }
func (t *timers) Pop() any {
	old := *t
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*t = old[:len(old)-1]
	return e
}

// popDue removes and returns every entry due at now.
func (t *timers) popDue(now time.Time) []*entry {
	var due []*entry
	for t.Len() > 0 && !(*t)[0].fireAt.After(now) {
		due = append(due, heap.Pop(t).(*entry))
	}
	return due
}
