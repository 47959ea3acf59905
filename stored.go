package cronfence

import (
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/cronfence/cronfence/store"
)

// storedJob is what a job made from a stored schedule carries beside its
// Job: which schedule and version it is, and its handler's arguments.
type storedJob struct {
	id        int64
	version   int64
	kind      string
	args      json.RawMessage
	createdAt time.Time // catch-up runs no slot from before it
}

// stored is this replica's view of the stored schedules, fed in the change
// log's order by internal/schedsync: the handler kinds it registers, and
// the job of every schedule whose kind it knows in its jobSet (on its
// timers once started). A schedule it cannot run (its kind unknown here,
// its name a declared job's, its settings refused) waits aside, and runs
// once its kind is registered; every replica that knows a kind runs its
// schedules, one claim per slot as for declared jobs.
type stored struct {
	e    *env
	jobs *jobSet
	// arm puts a job added or changed on the timers (once started), with
	// when the change was made.
	arm func(r *registered, since time.Time)

	mu     sync.Mutex
	kinds  map[string]Handler
	aside  map[string]store.Schedule // by name: the schedules not in jobs
	stale  int                       // jobs replaced or removed since the timers were compacted
	loaded bool
}

// registerKind adds the handler of a kind, and runs the schedules of that
// kind waiting aside.
func (st *stored) registerKind(kind string, h Handler) error {
	if err := store.ValidateName("kind", kind); err != nil {
		return errInvalid(err.Error())
	}
	if h == nil {
		return errInvalid("kind " + kind + ": handler is required")
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, dup := st.kinds[kind]; dup {
		return errInvalid("kind " + kind + " is already registered")
	}
	if st.kinds == nil {
		st.kinds = map[string]Handler{}
	}
	st.kinds[kind] = h
	for _, sc := range st.aside {
		if sc.Kind == kind {
			st.putLocked(sc)
		}
	}
	return nil
}

// handlerKinds returns the kinds registered, sorted.
func (st *stored) handlerKinds() []string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return slices.Sorted(maps.Keys(st.kinds))
}

// load replaces the view by every stored schedule.
func (st *stored) load(all []store.Schedule) {
	st.mu.Lock()
	defer st.mu.Unlock()
	keep := make(map[string]bool, len(all))
	for _, sc := range all {
		keep[sc.Name] = true
	}
	for name := range st.aside {
		if !keep[name] {
			st.removeLocked(name, 0)
		}
	}
	for _, r := range st.jobs.all() {
		if r.stored != nil && !keep[r.Name] {
			st.removeLocked(r.Name, 0)
		}
	}
	for _, sc := range all {
		st.putLocked(sc)
	}
	st.loaded = true
}

// apply applies one change of the log; one already applied (its version
// seen) changes nothing.
func (st *stored) apply(ch store.ScheduleChange) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if ch.Action == store.ScheduleDeleted {
		st.removeLocked(ch.Name, ch.ScheduleID)
		return
	}
	if ch.After == nil {
		return
	}
	sc := store.Schedule{ID: ch.ScheduleID, Name: ch.Name, ScheduleSettings: *ch.After, Version: ch.Version, UpdatedAt: ch.At, UpdatedBy: ch.By}
	if ch.Action == store.ScheduleCreated {
		sc.CreatedAt, sc.CreatedBy = ch.At, ch.By
	} else if r := st.jobs.get(ch.Name); r != nil && r.stored != nil && r.stored.id == ch.ScheduleID {
		sc.CreatedAt = r.stored.createdAt
	} else if old, ok := st.aside[ch.Name]; ok && old.ID == ch.ScheduleID {
		sc.CreatedAt = old.CreatedAt
	}
	st.putLocked(sc)
}

// shadowed keeps aside the stored schedule whose job a declared job of
// its name replaced (jobSet.add).
func (st *stored) shadowed(r *registered) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.e.Log.Warn("cronfence: stored schedule has a declared job's name; the declared job runs", "schedule", r.Name)
	if st.aside == nil {
		st.aside = map[string]store.Schedule{}
	}
	st.aside[r.Name] = scheduleOf(r)
	st.stale++
}

// takeStale returns how many jobs were replaced or removed since it was
// last called.
func (st *stored) takeStale() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	n := st.stale
	st.stale = 0
	return n
}

// putLocked makes sc's job this replica's, when it can run it, and keeps
// it aside when not.
func (st *stored) putLocked(sc store.Schedule) {
	if id, version, ok := st.known(sc.Name); ok && id == sc.ID && version >= sc.Version {
		return // applied already: the load showed it, or a change was read twice
	}
	if st.aside == nil {
		st.aside = map[string]store.Schedule{}
	}
	h := st.kinds[sc.Kind]
	var r *registered
	if h != nil {
		var err error
		if r, err = jobOf(sc, h, st.e.cfg.Exclude); err != nil {
			st.e.Log.Warn("cronfence: stored schedule refused; it does not run here", "schedule", sc.Name, "version", sc.Version, "error", err)
		}
	}
	if r == nil || !st.jobs.putStored(r) {
		if r != nil {
			st.e.Log.Warn("cronfence: stored schedule has a declared job's name; the declared job runs", "schedule", sc.Name)
		}
		if old := st.jobs.removeStored(sc.Name, 0); old != nil {
			st.stale++
		}
		st.aside[sc.Name] = sc
		return
	}
	delete(st.aside, sc.Name)
	st.stale++
	st.arm(r, sc.UpdatedAt)
}

// known returns the ID and version of the schedule name as this replica
// knows it.
func (st *stored) known(name string) (id, version int64, ok bool) {
	if r := st.jobs.get(name); r != nil && r.stored != nil {
		return r.stored.id, r.stored.version, true
	}
	sc, ok := st.aside[name]
	return sc.ID, sc.Version, ok
}

// removeLocked drops the schedule name, when it is the one with that ID
// (zero: whichever).
func (st *stored) removeLocked(name string, id int64) {
	if old, ok := st.aside[name]; ok && (id == 0 || old.ID == id) {
		delete(st.aside, name)
	}
	if st.jobs.removeStored(name, id) != nil {
		st.stale++
	}
}

// usedKinds returns the kinds the enabled stored schedules name, with a
// few of the schedules naming each; false until the schedules were loaded.
func (st *stored) usedKinds() (map[string][]string, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.loaded {
		return nil, false
	}
	const few = 5
	used := map[string][]string{}
	add := func(kind, name string) {
		if len(used[kind]) < few {
			used[kind] = append(used[kind], name)
		}
	}
	for _, sc := range st.aside {
		if !sc.Disabled {
			add(sc.Kind, sc.Name)
		}
	}
	for _, r := range st.jobs.all() {
		if r.stored != nil && !r.Disabled {
			add(r.stored.kind, r.Name)
		}
	}
	return used, true
}

// jobOf is the job of a stored schedule, run by h, excluding excludeAll
// too (Config.Exclude).
func jobOf(sc store.Schedule, h Handler, excludeAll []string) (*registered, error) {
	r, err := scheduleJob(sc.Name, sc.ScheduleSettings, h).prepare()
	if err != nil {
		return nil, err
	}
	if err := r.excludeAlso(excludeAll); err != nil {
		return nil, err
	}
	r.stored = &storedJob{id: sc.ID, version: sc.Version, kind: sc.Kind, args: sc.Args, createdAt: sc.CreatedAt}
	return r, nil
}

// scheduleOf is the stored schedule r was made of.
func scheduleOf(r *registered) store.Schedule {
	j := r.Job
	return store.Schedule{ID: r.stored.id, Name: j.Name, Version: r.stored.version, CreatedAt: r.stored.createdAt,
		ScheduleSettings: store.ScheduleSettings{
			Spec: j.Schedule, TimeZone: j.TimeZone, Kind: r.stored.kind, Args: r.stored.args, Overlap: string(j.Overlap),
			CatchUpWindow: j.CatchUpWindow, LeaseTTL: j.LeaseTTL, Timeout: j.Timeout, Deadline: j.Deadline,
			MaxAttempts: j.MaxAttempts, RetryBackoff: j.RetryBackoff, Disabled: j.Disabled,
			CatchUp: string(j.CatchUp), MaxCatchUp: j.MaxCatchUp, Jitter: j.Jitter, Exclude: j.Exclude,
		}}
}

// scheduleJob is the Job a stored schedule's settings declare.
func scheduleJob(name string, s store.ScheduleSettings, h Handler) Job {
	return Job{
		Name: name, Schedule: s.Spec, TimeZone: s.TimeZone, Handler: h, Timeout: s.Timeout, LeaseTTL: s.LeaseTTL,
		CatchUpWindow: s.CatchUpWindow, Overlap: Overlap(s.Overlap), Deadline: s.Deadline,
		MaxAttempts: s.MaxAttempts, RetryBackoff: s.RetryBackoff, Disabled: s.Disabled,
		CatchUp: CatchUp(s.CatchUp), MaxCatchUp: s.MaxCatchUp, Jitter: s.Jitter, Exclude: s.Exclude,
	}
}
