package config

import (
	"time"

	"github.com/cronfence/cronfence/store"
	"go.yaml.in/yaml/v3"
)

// Defaults of the monitor: section. They equal the cronfence package's
// (TestMonitorDefaultsMatchCronfence holds them to it), so a file without
// monitor: runs the scheduler exactly as a zero cronfence.Config does.
const (
	// DefaultHeartbeatEvery equals cronfence.DefaultHeartbeatEvery.
	DefaultHeartbeatEvery = 10 * time.Second
	// DefaultCheckEvery equals cronfence.DefaultCheckEvery.
	DefaultCheckEvery = 15 * time.Second
	// DefaultSkipStreak equals cronfence.DefaultSkipStreak.
	DefaultSkipStreak = 3
	// DefaultFailingSlots equals cronfence.DefaultFailingSlots.
	DefaultFailingSlots = 3
	// DefaultClockOffset equals cronfence.DefaultClockOffsetAlert.
	DefaultClockOffset = 2 * time.Second
	// DefaultOrphanWindow equals cronfence.DefaultOrphanWindow.
	DefaultOrphanWindow = 24 * time.Hour
	// ReplicaStaleHeartbeats is replica_stale's default in heartbeat
	// periods, as cronfence.AlertThresholds.ReplicaStale's: one slow round
	// trip must not make a live replica look stopped.
	ReplicaStaleHeartbeats = 3
)

// Bounds of the monitor: section.
const (
	// MinMonitorEvery is the shortest heartbeat_every and check_every. The
	// scheduler's loop, which sends heartbeats and starts checks, wakes
	// about once a second (cronfence.DefaultMaxSleep), and
	// cronfence.Config refuses a shorter CheckEvery.
	MinMonitorEvery = time.Second
	// MaxCheckEvery is the longest check_every: the replica running the
	// checks holds their lease for two periods, and a lease may last at
	// most store.MaxTTL.
	MaxCheckEvery = store.MaxTTL / 2
	// MaxSkipStreak is the largest skip_streak: a pass reads at most
	// store.MaxRunListLimit runs of a job, so a longer streak could never
	// be counted.
	MaxSkipStreak = store.MaxRunListLimit - 1
	// MaxFailingSlots is the largest failing_slots: a pass reads at most
	// 200 runs of a job for this check (of jobs with one attempt a slot).
	MaxFailingSlots = 199
)

// Off is heartbeat_every or check_every written as off (or as a negative
// duration): cronfence.Config disables what a negative period drives.
const Off time.Duration = -1

// monitorKeys are the fields of monitor:.
var monitorKeys = []string{"heartbeat_every", "check_every", "skip_streak", "failing_slots", "clock_offset", "replica_stale", "orphan_window"}

// Monitor is the monitor: section: the replica registry and the absence
// checks (docs/alerts.md). Its fields have the meanings of
// cronfence.Config's HeartbeatEvery and CheckEvery and of
// cronfence.AlertThresholds' fields, and always hold a value: the defaults
// when the file does not set them.
type Monitor struct {
	// HeartbeatEvery is how often this replica records itself in the
	// replica registry. Off keeps this replica out of the registry, and
	// then it runs no absence checks either. DefaultHeartbeatEvery (10s)
	// when not given; at least MinMonitorEvery.
	HeartbeatEvery time.Duration
	// CheckEvery is how often the absence checks run, on one replica at a
	// time. Off disables them on this replica. DefaultCheckEvery (15s) when
	// not given; between MinMonitorEvery and MaxCheckEvery.
	CheckEvery time.Duration
	// SkipStreak: more than this many skips in a row raise skip_streak.
	// DefaultSkipStreak (3) when not given; 1 to MaxSkipStreak.
	SkipStreak int
	// FailingSlots: this many slots in a row that ended failed raise
	// failing. DefaultFailingSlots (3) when not given; 1 to
	// MaxFailingSlots.
	FailingSlots int
	// ClockOffset: a replica's clock further than this from the database
	// clock raises clock_offset. DefaultClockOffset (2s) when not given.
	ClockOffset time.Duration
	// ReplicaStale: a replica whose last heartbeat is older than this is
	// not live, for the checks, the REST API and the dashboard. It must be
	// at least twice HeartbeatEvery, and exceed the HeartbeatEvery of every
	// replica on the database. ReplicaStaleHeartbeats (3) times
	// HeartbeatEvery when not given (times DefaultHeartbeatEvery when the
	// heartbeat is off).
	ReplicaStale time.Duration
	// OrphanWindow: a job that only replicas which died registered raises
	// orphan_job for this long after their last heartbeat.
	// DefaultOrphanWindow (24h) when not given.
	OrphanWindow time.Duration
	// Line is the line of the monitor: key, 0 when the file sets none.
	Line int
}

// defaultMonitor is the section when the file leaves it out.
func defaultMonitor() Monitor {
	return Monitor{
		HeartbeatEvery: DefaultHeartbeatEvery, CheckEvery: DefaultCheckEvery, SkipStreak: DefaultSkipStreak,
		FailingSlots: DefaultFailingSlots,
		ClockOffset:  DefaultClockOffset, ReplicaStale: ReplicaStaleHeartbeats * DefaultHeartbeatEvery,
		OrphanWindow: DefaultOrphanWindow,
	}
}

// monitor decodes the section whose key is k and value n. Fields that
// depend on each other are checked once all are read, so their order in
// the file does not matter.
func (d *decoder) monitor(k, n *yaml.Node) Monitor {
	m := defaultMonitor()
	m.Line = k.Line
	var heartbeat, check, stale opt[time.Duration]
	d.mapping(n, "monitor", monitorKeys, func(key string, _, v *yaml.Node) {
		path := "monitor." + key
		switch key {
		case "heartbeat_every":
			x, ok := d.period(v, path, DefaultHeartbeatEvery, 0)
			heartbeat = set(x, ok, v, path)
		case "check_every":
			x, ok := d.period(v, path, DefaultCheckEvery, MaxCheckEvery)
			check = set(x, ok, v, path)
		case "skip_streak":
			if x, ok := d.intIn(v, path, 1, MaxSkipStreak); ok {
				m.SkipStreak = x
			}
		case "failing_slots":
			if x, ok := d.intIn(v, path, 1, MaxFailingSlots); ok {
				m.FailingSlots = x
			}
		case "clock_offset":
			m.ClockOffset = d.positive(v, path, m.ClockOffset)
		case "replica_stale":
			x, ok := d.duration(v, path)
			if ok && x == 0 {
				d.errorf(v.Line, path, "must be positive; leave it out for %d heartbeat periods", ReplicaStaleHeartbeats)
				ok = false
			}
			stale = set(x, ok, v, path)
		case "orphan_window":
			m.OrphanWindow = d.positive(v, path, m.OrphanWindow)
		}
	})
	if heartbeat.set {
		m.HeartbeatEvery = heartbeat.v
	}
	if check.set {
		m.CheckEvery = check.v
	}
	if m.HeartbeatEvery > 0 {
		m.ReplicaStale = ReplicaStaleHeartbeats * m.HeartbeatEvery
	}
	if stale.set {
		m.ReplicaStale = stale.v
		if m.HeartbeatEvery > 0 && stale.v < 2*m.HeartbeatEvery {
			d.errorf(stale.line, stale.path, "%s must be at least twice heartbeat_every (%s), or one late heartbeat makes a live replica look stopped",
				stale.v, m.HeartbeatEvery)
		}
	}
	// The checks wait for this replica's own registry row, so asking for
	// them without a heartbeat is a contradiction (cronfence.Config
	// silently runs none).
	if check.set && check.v > 0 && heartbeat.set && heartbeat.v < 0 {
		d.errorf(check.line, check.path, "the absence checks need this replica's heartbeat, but heartbeat_every is off (line %d); set check_every: off as well",
			heartbeat.line)
	}
	d.boundReplicaStale(m, stale, heartbeat)
	return m
}

// period decodes heartbeat_every or check_every: a duration of at least
// MinMonitorEvery (and at most max, when max is not 0), or off (see
// durationOrOff).
func (d *decoder) period(n *yaml.Node, path string, def, max time.Duration) (time.Duration, bool) {
	v, text, ok := d.durationOrOff(n, path, `"30s"`, "disable", def)
	switch {
	case !ok || v < 0:
		return v, ok
	case v < MinMonitorEvery:
		d.errorf(n.Line, path, "%q must be at least %s, or off to disable", text, MinMonitorEvery)
	case max > 0 && v > max:
		d.errorf(n.Line, path, "%q must be at most %s", text, max)
	default:
		return v, true
	}
	return 0, false
}

// durationOrOff decodes a duration, or off (Off). A negative duration
// means off too, as in cronfence.Config; zero is refused, since the
// library reads it as "the default" (def) and a reader of the file might
// read it as "never". example is the duration an error suggests, offDoes
// what off does, for the messages. text is the value as written (its
// ${VAR}s expanded), for the caller's own messages.
func (d *decoder) durationOrOff(n *yaml.Node, path, example, offDoes string, def time.Duration) (v time.Duration, text string, ok bool) {
	if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") {
		v, ok := d.duration(n, path) // reports the bare number
		return v, n.Value, ok
	}
	s, ok := d.str(n, path)
	if !ok {
		return 0, "", false
	}
	if s == "off" {
		return Off, s, true
	}
	v, err := time.ParseDuration(s)
	switch {
	case err != nil:
		d.errorf(n.Line, path, "%q is not a duration; write e.g. %s, or off to %s", truncate(s), example, offDoes)
	case v < 0:
		return Off, s, true
	case v == 0:
		d.errorf(n.Line, path, "must not be zero; leave it out for %s, or write off to %s", def, offDoes)
	default:
		return v, s, true
	}
	return 0, s, false
}

// positive decodes a duration that must be above zero, returning def when
// it is not valid (the problem is reported).
func (d *decoder) positive(n *yaml.Node, path string, def time.Duration) time.Duration {
	v, ok := d.duration(n, path)
	if !ok {
		return def
	}
	if v == 0 {
		d.errorf(n.Line, path, "must be positive; leave it out for %s", def)
		return def
	}
	return v
}
