package absence

import (
	"cmp"
	"slices"
	"time"

	"github.com/cronfence/cronfence/store"
)

// Kinds are the alert kinds these checks decide. An open alert of another
// kind is not theirs to resolve.
var Kinds = []store.AlertKind{
	store.AlertDeadlineMissed, store.AlertLeaseStuck, store.AlertSkipStreak, store.AlertSlowRun,
	store.AlertConfigDrift, store.AlertOrphanJob, store.AlertClockOffset, store.AlertFailing,
	store.AlertKindUnknown,
}

// Thresholds tune the checks. The scheduler fills them from its Config,
// with defaults; a zero field here means the check it tunes is off.
type Thresholds struct {
	// SkipStreak: more than this many skips in a row raise skip_streak.
	SkipStreak int
	// Failing: this many slots in a row that ended failed raise failing.
	Failing int
	// ClockOffset: a live replica further than this from the database
	// clock raises clock_offset.
	ClockOffset time.Duration
	// ReplicaStale: a replica whose last heartbeat is older than this is not
	// live.
	ReplicaStale time.Duration
	// OrphanWindow: a replica that died (its registry row left behind)
	// makes orphans of its jobs for this long after its last heartbeat.
	OrphanWindow time.Duration
	// Retention is how long slots are kept (Config.Retention); zero when
	// they are never pruned. A slot older than this may have been pruned,
	// so its missing row says nothing about whether it ran.
	Retention time.Duration
}

// Alert is an alert that should be open.
type Alert struct {
	Kind    store.AlertKind
	Subject string // a job name, or a replica's owner for clock_offset
	Message string
	Details map[string]string
}

// Key identifies an alert: one may be open per (Kind, Subject).
type Key struct {
	Kind    store.AlertKind
	Subject string
}

// Key returns the alert's identity.
func (a Alert) Key() Key { return Key{a.Kind, a.Subject} }

// Result is what Evaluate found.
type Result struct {
	// Alerts should be open, by kind then subject.
	Alerts []Alert
	// unknown are the (kind, subject) pairs no check could judge.
	unknown map[Key]bool
	// kindsUnread: the stored schedules were not read, so no
	// kind_unknown alert is judged.
	kindsUnread bool
}

// Judged reports whether the checks could judge (kind, subject): when they
// could not, an open alert of it must be left open, not resolved.
func (r Result) Judged(kind store.AlertKind, subject string) bool {
	if kind == store.AlertKindUnknown && r.kindsUnread {
		return false
	}
	return !r.unknown[Key{kind, subject}] && slices.Contains(Kinds, kind)
}

// Snapshot is everything the checks read, gathered by the monitor in one
// pass. Times are the database clock's.
type Snapshot struct {
	// Registry is the replica registry as of Registry.Now.
	Registry *Registry
	// States are the jobs' pause overrides (store.JobStateList).
	States []store.JobState
	// Recent are the newest run rows of all jobs, newest first: the orphan
	// check names an orphan's latest run from them.
	Recent []store.Run
	// Jobs are, per job the live replicas register, what the monitor read
	// for it (see JobData).
	Jobs map[string]JobData
	// LeasesReadBy is a database clock reading taken with or after the
	// last lease in Jobs was read (the monitor uses the one LeaseList
	// judged them by); zero means Registry.Now. The leases are judged by
	// it, not by Registry.Now, which was read before them: a lease released
	// in between has an expiry after Registry.Now, and, judged by that,
	// looks held and unrenewed for most of its (release-shortened) TTL.
	LeasesReadBy time.Time
	// StoredKinds are the handler kinds the enabled stored schedules name,
	// with a few of the schedules naming each; nil when they were not read.
	StoredKinds map[string][]string
}

// JobData is what the monitor read for one registered job.
type JobData struct {
	// Lease is the job's lease (Job.LeaseName) as stored; zero when there is
	// none or the job has no single lease (overlap "allow").
	Lease store.Lease
	// Runs are the job's newest run rows, newest first.
	Runs []store.Run
	// DeadlineSlot is the claim (store.SlotGet) of Job.DeadlineSlot at
	// Registry.Now, when that is not zero; zero when the slot was never
	// claimed.
	DeadlineSlot store.Slot
}

// Evaluate runs every check on the snapshot.
func Evaluate(s Snapshot, th Thresholds) Result {
	r := Result{unknown: map[Key]bool{}}
	reg := s.Registry
	now := reg.Now
	leasesNow := now
	if !s.LeasesReadBy.IsZero() {
		leasesNow = s.LeasesReadBy
	}
	paused := pausedJobs(s.States, reg, now)
	for _, name := range reg.Names() {
		j := reg.Jobs[name]
		d := s.Jobs[name]
		if j.ScheduleErr != nil {
			// Without a schedule no slot or interval can be computed.
			r.unknown[Key{store.AlertDeadlineMissed, name}] = true
			r.unknown[Key{store.AlertSlowRun, name}] = true
		} else {
			switch slot := j.DeadlineSlot(now); {
			case paused[name]:
			case d.DeadlineSlot.Slot.IsZero() && th.Retention > 0 && slot.Before(now.Add(-th.Retention)):
				// Pruning keeps each job's latest slot only, and a job whose
				// interval outlasts the retention judges the one before it
				// (a monthly job, for its deadline's length into the new
				// month): that row may be gone. The slot was judged while it
				// was young; an alert then raised stays open.
				r.unknown[Key{store.AlertDeadlineMissed, name}] = true
			default:
				r.add(checkDeadline(j, d, now))
			}
			r.add(checkSlowRun(j, d))
		}
		r.add(checkLease(j, d, leasesNow))
		r.add(checkSkipStreak(j, d, th.SkipStreak))
		r.add(checkFailing(j, d, th.Failing))
		r.add(checkDrift(j))
	}
	for _, a := range checkOrphans(reg, s.States, s.Recent, th.OrphanWindow) {
		r.add(a, true)
	}
	for _, a := range checkClockOffsets(reg, th.ClockOffset) {
		r.add(a, true)
	}
	if s.StoredKinds == nil {
		r.kindsUnread = true
	}
	for _, a := range checkKinds(reg, s.StoredKinds) {
		r.add(a, true)
	}
	slices.SortFunc(r.Alerts, func(a, b Alert) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Subject, b.Subject))
	})
	return r
}

func (r *Result) add(a Alert, ok bool) {
	if ok {
		r.Alerts = append(r.Alerts, a)
	}
}

// pausedJobs are the registered jobs that are off: by their override, or
// declared disabled without one. A paused job's slots are not run on
// purpose, so they miss no deadline. A pause that ended by now (pause
// until) counts no more.
func pausedJobs(states []store.JobState, reg *Registry, now time.Time) map[string]bool {
	override := make(map[string]bool, len(states))
	for _, st := range states {
		if o := st.Override(now); o != nil {
			override[st.Job] = *o
		}
	}
	out := map[string]bool{}
	for name, j := range reg.Jobs {
		enabled, set := override[name]
		if !set {
			enabled = !j.Settings.Disabled
		}
		if !enabled {
			out[name] = true
		}
	}
	return out
}

// formatting helpers shared by the checks

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func dur(d time.Duration) string {
	if d >= time.Second {
		d = d.Round(time.Second)
	}
	return d.String()
}
