// Package schedcache shares parsed schedules and time zones among the jobs
// that use the same ones: a process with many jobs has few distinct
// schedules ("0 0 * * *" for thousands of tenants) and fewer zones.
package schedcache

import (
	"runtime"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/cronfence/cronfence/schedule"
)

// locations shares one *time.Location per zone name: time.LoadLocation
// reads and keeps a fresh copy of the zone's transitions on every call,
// about 6 KB a job for a zone with a long history.
var locations sync.Map // zone name → *time.Location

func Location(name string) (*time.Location, error) {
	if loc, ok := locations.Load(name); ok {
		return loc.(*time.Location), nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	actual, _ := locations.LoadOrStore(name, loc)
	return actual.(*time.Location), nil
}

// schedules shares one parsed schedule among the jobs registered with the
// same spec and zone: a process with many jobs has few distinct schedules
// ("0 0 * * *" for thousands of tenants), and each parse would hold its own
// copy of the spec's text and field sets (about 190 bytes). A Schedule is
// immutable and safe for concurrent use, so sharing one changes no answer.
// The cache holds its schedules weakly: one no job uses any more is
// collected, and its entry removed, so the cache never outgrows the
// schedules in use however many distinct specs a process parses.
var schedules sync.Map // scheduleKey → weak.Pointer[Schedule]

type scheduleKey struct{ spec, zone string }

// Schedule is a schedule shared by the jobs of one spec and zone: a
// pointer, for weak.Pointer.
type Schedule struct{ schedule.Schedule }

// Parse parses spec in loc, the location of the zone named zone
// (Location), or returns the schedule already parsed for them.
func Parse(spec, zone string, loc *time.Location) (*Schedule, error) {
	key := scheduleKey{spec, zone}
	if v, ok := schedules.Load(key); ok {
		if shared := v.(weak.Pointer[Schedule]).Value(); shared != nil {
			return shared, nil
		}
	}
	sched, err := schedule.Parse(spec, &schedule.Options{Location: loc})
	if err != nil {
		return nil, err
	}
	shared := &Schedule{sched}
	wp := weak.Make(shared)
	// Clone the key's strings: a spec cut from a larger text (a config
	// file) would otherwise keep all of it alive.
	key = scheduleKey{strings.Clone(spec), strings.Clone(zone)}
	for {
		v, loaded := schedules.LoadOrStore(key, wp)
		if loaded {
			if other := v.(weak.Pointer[Schedule]).Value(); other != nil {
				return other, nil // parsed meanwhile by another Register
			}
			if !schedules.CompareAndSwap(key, v, wp) {
				continue // replaced meanwhile: look again
			}
		}
		runtime.AddCleanup(shared, func(key scheduleKey) { schedules.CompareAndDelete(key, wp) }, key)
		return shared, nil
	}
}
