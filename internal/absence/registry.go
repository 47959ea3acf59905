package absence

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/cronfence/cronfence/schedule"
	"github.com/cronfence/cronfence/store"
)

// Registry is the replica registry judged at one instant of the database
// clock: which replicas are live and which jobs they register.
type Registry struct {
	Now      time.Time
	Replicas []store.Replica // every recorded replica, live or not
	Live     []store.Replica // those whose heartbeat is within the staleness threshold
	Jobs     map[string]*Job // the jobs live replicas register
	names    []string
}

// Job is one job as the live replicas register it.
type Job struct {
	Name string
	// Settings are the job's settings as registered by the newest live
	// replica (latest StartedAt, then greatest owner): during a rolling
	// deploy, the configuration being rolled out.
	Settings store.ReplicaJob
	// Registrations are each live replica's registration of the job, by
	// owner.
	Registrations []Registration
	// FirstRegistered is the earliest StartedAt of the recorded replicas
	// registering the job: no slot before it is expected to have run.
	FirstRegistered time.Time
	// Schedule is Settings' schedule parsed in its zone; nil when it does
	// not parse (ScheduleErr says why).
	Schedule    schedule.Schedule
	ScheduleErr error
}

// Registration is one live replica's registration of a job.
type Registration struct {
	Owner     string
	StartedAt time.Time
	Job       store.ReplicaJob
}

// NewRegistry judges the recorded replicas at now (the database clock): a
// replica is live when its last heartbeat is no older than stale. scheds
// caches parsed schedules across calls; nil parses each time.
func NewRegistry(replicas []store.Replica, now time.Time, stale time.Duration, scheds *Schedules) *Registry {
	reg := &Registry{Now: now, Replicas: replicas, Jobs: map[string]*Job{}}
	for _, rep := range replicas {
		if now.Sub(rep.HeartbeatAt) <= stale {
			reg.Live = append(reg.Live, rep)
		}
	}
	for _, rep := range reg.Live {
		for _, rj := range rep.Jobs {
			j := reg.Jobs[rj.Name]
			if j == nil {
				j = &Job{Name: rj.Name}
				reg.Jobs[rj.Name] = j
				reg.names = append(reg.names, rj.Name)
			}
			j.Registrations = append(j.Registrations, Registration{Owner: rep.Owner, StartedAt: rep.StartedAt, Job: rj})
		}
	}
	slices.Sort(reg.names)
	for _, j := range reg.Jobs {
		slices.SortFunc(j.Registrations, func(a, b Registration) int { return cmp.Compare(a.Owner, b.Owner) })
		newest := j.Registrations[0]
		for _, r := range j.Registrations[1:] {
			if r.StartedAt.After(newest.StartedAt) || r.StartedAt.Equal(newest.StartedAt) {
				newest = r
			}
		}
		j.Settings = newest.Job
		j.Schedule, j.ScheduleErr = scheds.Parse(j.Settings.Schedule, j.Settings.TimeZone)
	}
	// Stale replicas count for FirstRegistered: the job was registered
	// then, even if that replica has died since.
	for _, rep := range replicas {
		for _, rj := range rep.Jobs {
			if j := reg.Jobs[rj.Name]; j != nil && (j.FirstRegistered.IsZero() || rep.StartedAt.Before(j.FirstRegistered)) {
				j.FirstRegistered = rep.StartedAt
			}
		}
	}
	return reg
}

// Names returns the registered jobs' names, sorted.
func (r *Registry) Names() []string { return r.names }

// IsLive reports whether owner is a live replica.
func (r *Registry) IsLive(owner string) bool {
	return slices.ContainsFunc(r.Live, func(rep store.Replica) bool { return rep.Owner == owner })
}

// LeaseName is the lease that guards the job's runs, as the scheduler names
// it (registered.leaseName in the root package), or "" for a job with
// overlap "allow", whose runs each take a lease of their own slot.
func (j *Job) LeaseName() string {
	if j.Settings.Overlap == "allow" {
		return ""
	}
	return "job:" + j.Name
}

// DeadlineSlot is the slot the deadline check judges at now: the latest
// slot whose deadline has passed. It is zero when the job has no deadline,
// no such slot, or the slot is not after FirstRegistered (nobody was there
// to run it).
func (j *Job) DeadlineSlot(now time.Time) time.Time {
	if j.Settings.Deadline <= 0 || j.Schedule == nil {
		return time.Time{}
	}
	slot := j.Schedule.Prev(now.Add(-j.Settings.Deadline))
	if slot.IsZero() || !slot.After(j.FirstRegistered) {
		return time.Time{}
	}
	return slot.UTC()
}

// Schedules parses schedules once per (spec, zone). The zero value is ready
// to use; a nil *Schedules parses without caching. Safe for concurrent use.
type Schedules struct {
	mu sync.Mutex
	m  map[[2]string]parsed
}

type parsed struct {
	s   schedule.Schedule
	err error
}

// maxCachedSchedules bounds the cache: specs change rarely, but a process
// that lives through many deploys should not keep every spec it ever saw.
const maxCachedSchedules = 4096

// Parse parses spec in the IANA zone tz (UTC when empty), as the scheduler
// does for a job.
func (c *Schedules) Parse(spec, tz string) (schedule.Schedule, error) {
	if c == nil {
		return parse(spec, tz)
	}
	key := [2]string{spec, tz}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.m[key]; ok {
		return p.s, p.err
	}
	if c.m == nil || len(c.m) >= maxCachedSchedules {
		c.m = map[[2]string]parsed{}
	}
	s, err := parse(spec, tz)
	c.m[key] = parsed{s, err}
	return s, err
}

func parse(spec, tz string) (schedule.Schedule, error) {
	loc := time.UTC
	if tz != "" {
		var err error
		if loc, err = time.LoadLocation(tz); err != nil {
			return nil, err
		}
	}
	return schedule.Parse(spec, &schedule.Options{Location: loc})
}
