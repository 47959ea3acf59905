package cronfence

import (
	"container/heap"
	"log/slog"
	"sync"
	"time"
)

// The first stage of the slot pipeline: one heap of next fires for all
// jobs, so a replica with many jobs wakes once per distinct instant. The
// loop pops what is due and hands it to the claimer; later stages put
// entries back only through refire and rearm, which the scheduler hands
// them.

// entry is one slot on the timer heap.
type entry struct {
	job    *registered
	slot   time.Time // the slot to claim when the entry fires
	fireAt time.Time // when to fire, on the replica's database-corrected clock
	// origin is why the slot is claimed: OriginScheduled, OriginCatchUp
	// for a catch-up tried again (given up only past its window), or
	// OriginRetry.
	origin Origin
	// attempt is, for OriginRetry, the failed attempt the entry retries
	// (store.SlotClaimParams.RetryOf). An int32 fits the struct's padding.
	attempt int32
	again   bool // a slot fired again; its job was re-armed when it first fired
	deposed bool // fired again because a deposed writer still held its lease: its alert is raised
	// fallback is a slot fired again because another replica is preferred for it
	// (peers.Prefer), dropped when that one's claim is told.
	fallback bool
}

// entryHeap is a min-heap of entries by fireAt. It keeps no index in the
// entries: nothing fixes or removes one in place, and without it an entry
// takes 80 bytes instead of 96, one per job.
type entryHeap []*entry

func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(i, j int) bool { return h[i].fireAt.Before(h[j].fireAt) }
func (h entryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *entryHeap) Push(x any)        { *h = append(*h, x.(*entry)) }
func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

// timers is the heap and the slots a stall passed over.
type timers struct {
	e *env
	// current is the job registered in place of an entry's, when it
	// fires: the job itself, the same stored schedule edited, or nil for
	// an entry to drop (jobSet.current).
	current func(r *registered, again bool) *registered

	mu   sync.Mutex
	heap entryHeap
	// passedOver is the first slot a stall passed over, by the job's
	// latest slot that the stalled entry claims instead, until that entry
	// fires or is dropped (a fallback whose slot another replica claimed).
	passedOver map[slotKey]time.Time
}

// appliedLate bounds how late a slot that came due between a stored
// schedule's change and this replica applying it still fires (see arm): a
// few polls, or a loaded machine's notice; longer is catch-up's matter.
const appliedLate = time.Minute

// arm puts the job's next slot after now on the heap, as it is added; or
// its latest slot, when that is still to fire: its run is delayed by the
// job's jitter until after now (a replica that starts, or a job added,
// inside that delay fires it as the others do), or it came due since the
// job took its settings (since, when not zero: a stored schedule's change,
// which a replica applies a moment after it was made), at most appliedLate
// ago, and fires at once. The store runs each slot once, so a slot another
// replica ran already is refused.
func (t *timers) arm(r *registered, now, since time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r.Jitter > 0 || !since.IsZero() { // else no latest slot can be still to fire: not read
		switch last := r.sched.Prev(now); {
		case last.IsZero():
		case r.Jitter > 0 && last.Add(r.delay(last)).After(now),
			!since.IsZero() && last.After(since) && now.Sub(last) <= appliedLate:
			t.push1(r, last)
			return
		}
	}
	t.armLocked(r, now)
}

// armLocked puts the job's next slot after now on the heap.
func (t *timers) armLocked(r *registered, now time.Time) {
	next := r.sched.Next(now)
	if next.IsZero() {
		t.e.Log.Warn("cronfence: job has no future slot", "job", r.Name, "schedule", r.Schedule)
		return
	}
	t.push1(r, next)
}

// push1 puts the job's slot on the heap, to fire when its run is due (its
// jitter's delay after it) less the claim's lead.
func (t *timers) push1(r *registered, slot time.Time) {
	fireAt := slot.Add(r.delay(slot) - t.e.claimLead)
	if _, ok := r.excluded(slot); ok {
		// Recorded skipped, not claimed: once the database clock has
		// passed the slot (Store.SlotSkip records nothing before).
		fireAt = slot.Add(t.e.claimLead)
	}
	heap.Push(&t.heap, &entry{job: r, slot: slot.UTC(), fireAt: fireAt, origin: OriginScheduled})
}

// push puts entries back on the heap as they are.
func (t *timers) push(es ...*entry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range es {
		heap.Push(&t.heap, e)
	}
}

// refire fires e's slot again after about wait (at least 20 ms, at most
// MaxSleep), keeping its origin, without re-arming its job.
func (t *timers) refire(e *entry, wait time.Duration) {
	wait = min(max(wait+20*time.Millisecond, 20*time.Millisecond), t.e.cfg.MaxSleep)
	t.push(&entry{job: e.job, slot: e.slot, fireAt: t.e.Now().Add(wait), origin: e.origin, attempt: e.attempt, again: true, deposed: e.deposed})
}

// len is how many entries wait on the heap.
func (t *timers) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.heap)
}

// next is the earliest fire, if any.
func (t *timers) next() (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.heap) == 0 {
		return time.Time{}, false
	}
	return t.heap[0].fireAt, true
}

// popDue removes and returns every entry due at now. Each job is re-armed
// before its slot is claimed, so a slow store never delays the next slot
// (a retry was re-armed when it first fired; a slot fired ahead of its
// instant is still after now, so it is armed after its slot). An entry
// whose loop woke too late for its slot (the host slept or starved, the
// process was stopped, the clock jumped) moves to its job's latest slot,
// and the first slot passed over is kept, for the replica that claims the
// latest to record what was passed over (takePassedOver).
func (t *timers) popDue(now time.Time) []*entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	var due []*entry
	for t.heap.Len() > 0 && !t.heap[0].fireAt.After(now) {
		e := heap.Pop(&t.heap).(*entry)
		if e.job = t.current(e.job, e.again); e.job != nil {
			due = append(due, e)
		}
	}
	var stalled stall
	for _, e := range due {
		if e.again {
			continue
		}
		t.armLocked(e.job, latest(now, e.slot))
		if last := e.job.sched.Prev(now); last.After(e.slot) {
			stalled.add(e.job.Name, e.slot, last.UTC())
			if t.passedOver == nil {
				t.passedOver = map[slotKey]time.Time{}
			}
			t.passedOver[keyOf(e.job.Name, last)] = e.slot
			e.slot = last.UTC()
		}
	}
	stalled.log(t.e.Log)
	return due
}

// compact drops the entries of jobs no longer registered as they were (a
// stored schedule edited or deleted), which would otherwise wait on the
// heap until their fire; edits of many schedules at once call it.
func (t *timers) compact() {
	t.mu.Lock()
	defer t.mu.Unlock()
	kept := t.heap[:0]
	for _, e := range t.heap {
		if e.job = t.current(e.job, e.again); e.job != nil {
			kept = append(kept, e)
		}
	}
	clear(t.heap[len(kept):])
	t.heap = kept
	heap.Init(&t.heap)
}

// takePassedOver takes out the first slot a stall passed over before each
// entry's slot, by entry.
func (t *timers) takePassedOver(due []*entry) map[*entry]time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.passedOver) == 0 {
		return nil
	}
	by := map[*entry]time.Time{}
	for _, e := range due {
		key := keyOf(e.job.Name, e.slot)
		if first, ok := t.passedOver[key]; ok {
			by[e] = first
			delete(t.passedOver, key)
		}
	}
	return by
}

// forgetPassedOver drops what a stall passed over before slots another
// replica claimed: it records them, having stalled too or run them. With
// old set, it also drops what is older than keep before now: its entry
// was replaced.
func (t *timers) forgetPassedOver(keys []slotKey, now time.Time, keep time.Duration, old bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		delete(t.passedOver, k)
	}
	if old {
		for k := range t.passedOver {
			if now.Sub(time.Unix(0, k.slot)) > keep {
				delete(t.passedOver, k)
			}
		}
	}
}

// stall gathers the jobs a pass found slots passed over for, to say so in
// one line, not a line per job of thousands.
type stall struct {
	jobs                int
	firstJob            string
	firstMissed, firing time.Time
}

func (st *stall) add(job string, missed, firing time.Time) {
	if st.jobs == 0 {
		st.firstJob, st.firstMissed, st.firing = job, missed, firing
	}
	st.jobs++
	if missed.Before(st.firstMissed) {
		st.firstMissed = missed
	}
	st.firing = latest(st.firing, firing)
}

func (st *stall) log(l *slog.Logger) {
	if st.jobs == 0 {
		return
	}
	l.Warn("cronfence: slots passed while the scheduler could not fire", "job", st.firstJob, "jobs", st.jobs,
		"first_missed", st.firstMissed, "firing", st.firing)
}

// slotKey names one slot of one job.
type slotKey struct {
	job  string
	slot int64 // UnixNano
}

func keyOf(job string, slot time.Time) slotKey { return slotKey{job, slot.UnixNano()} }

// latest is the later of a and b.
func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
