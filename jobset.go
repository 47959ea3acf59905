package cronfence

import (
	"fmt"
	"sync"
	"time"

	"github.com/cronfence/cronfence/store"
)

// jobSet is a replica's jobs: those declared (Register) and those made
// from stored schedules whose kind it knows (stored.go), by name, and what
// it recorded of the declared ones in the store: when each with a
// CatchUpWindow was first registered on any replica (catch-up runs no slot
// from before), and which it has not recorded yet. A declared job and a
// stored schedule never share a name: the declared one wins.
type jobSet struct {
	mu         sync.Mutex
	byName     map[string]*registered
	declared   int // how many of byName are declared
	firstSeen  map[string]time.Time
	unrecorded []string // registered after Start, their first registration not recorded yet
	gen        uint64   // counts the declared jobs added, so the registry row is sent again after one
}

// add registers the declared job r, in place of a stored schedule of its
// name (returned, to be kept aside); started says the scheduler runs, so
// its first registration is recorded by the next tick.
func (js *jobSet) add(r *registered, started bool) (shadowed *registered, err error) {
	js.mu.Lock()
	defer js.mu.Unlock()
	if old, dup := js.byName[r.Name]; dup {
		if old.stored == nil {
			return nil, errInvalid(fmt.Sprintf("job %q is already registered", r.Name))
		}
		shadowed = old
	}
	if js.byName == nil {
		js.byName = map[string]*registered{}
	}
	js.byName[r.Name] = r
	js.declared++
	js.gen++
	if started {
		js.unrecorded = append(js.unrecorded, r.Name)
	}
	return shadowed, nil
}

// putStored puts the job of a stored schedule in place of the one of its
// name, if any; false when a declared job has the name.
func (js *jobSet) putStored(r *registered) bool {
	js.mu.Lock()
	defer js.mu.Unlock()
	if old := js.byName[r.Name]; old != nil && old.stored == nil {
		return false
	}
	if js.byName == nil {
		js.byName = map[string]*registered{}
	}
	js.byName[r.Name] = r
	return true
}

// removeStored removes the job of the stored schedule name, when it is
// the one with that ID (zero: whichever), and returns it.
func (js *jobSet) removeStored(name string, id int64) *registered {
	js.mu.Lock()
	defer js.mu.Unlock()
	r := js.byName[name]
	if r == nil || r.stored == nil || id != 0 && r.stored.id != id {
		return nil
	}
	delete(js.byName, name)
	return r
}

// current is the job now registered in r's place, for an entry of r on
// the timers: r itself; the same stored schedule, edited (again set: the
// entry is a slot fired again, which runs under the new settings); or nil:
// the entry is dropped, its job gone, or re-armed when it changed.
//
// A declared job never leaves the set (add refuses its name twice, and
// nothing removes one), so it is answered without the set's lock: every
// timer fire asks, thousands a second under load.
func (js *jobSet) current(r *registered, again bool) *registered {
	if r.stored == nil {
		return r
	}
	js.mu.Lock()
	defer js.mu.Unlock()
	cur := js.byName[r.Name]
	switch {
	case cur == r:
		return r
	case again && cur != nil && cur.stored != nil && r.stored != nil && cur.stored.id == r.stored.id:
		return cur
	}
	return nil
}

// get returns the job registered as name, or nil.
func (js *jobSet) get(name string) *registered {
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.byName[name]
}

// all returns the registered jobs, declared and stored, in no order.
func (js *jobSet) all() []*registered {
	js.mu.Lock()
	defer js.mu.Unlock()
	out := make([]*registered, 0, len(js.byName))
	for _, r := range js.byName {
		out = append(out, r)
	}
	return out
}

// declaredJobs returns the declared jobs, in no order.
func (js *jobSet) declaredJobs() []*registered {
	js.mu.Lock()
	defer js.mu.Unlock()
	out := make([]*registered, 0, js.declared)
	for _, r := range js.byName {
		if r.stored == nil {
			out = append(out, r)
		}
	}
	return out
}

// count is how many jobs are declared.
func (js *jobSet) count() int {
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.declared
}

// generation is the count of declared jobs ever added.
func (js *jobSet) generation() uint64 {
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.gen
}

// takeUnrecorded returns the jobs whose first registration is not
// recorded, and forgets them.
func (js *jobSet) takeUnrecorded() []string {
	js.mu.Lock()
	defer js.mu.Unlock()
	names := js.unrecorded
	js.unrecorded = nil
	return names
}

// notRecorded puts names back to be recorded by the next tick.
func (js *jobSet) notRecorded(names []string) {
	js.mu.Lock()
	defer js.mu.Unlock()
	js.unrecorded = append(js.unrecorded, names...)
}

// recorded notes the first registrations the store answered.
func (js *jobSet) recorded(regs []store.JobRegistration) {
	js.mu.Lock()
	defer js.mu.Unlock()
	for _, reg := range regs {
		// Only catch-up reads it, and only of jobs with a window.
		if r := js.byName[reg.Job]; r != nil && r.CatchUpWindow > 0 {
			if js.firstSeen == nil {
				js.firstSeen = map[string]time.Time{}
			}
			js.firstSeen[reg.Job] = reg.FirstSeen
		}
	}
}

// firstSeenOf is when the job was first registered on any replica, or
// its stored schedule created; zero when not known.
func (js *jobSet) firstSeenOf(name string) time.Time {
	js.mu.Lock()
	defer js.mu.Unlock()
	if r := js.byName[name]; r != nil && r.stored != nil {
		return r.stored.createdAt
	}
	return js.firstSeen[name]
}
