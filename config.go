package cronfence

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/internal/registry"
	"github.com/cronfence/cronfence/schedule"
	"github.com/cronfence/cronfence/store"
)

// Clock tells the time and makes timers. The scheduler uses it for its own
// timers only: every lease and claim is judged by the database clock.
// Tests inject one to move time by hand; production leaves it nil.
type Clock = clock.Clock

// Timer is what a Clock's NewTimer returns.
type Timer = clock.Timer

const (
	// DefaultRetention is how long runs and claims are kept.
	DefaultRetention = 7 * 24 * time.Hour
	// DefaultPruneEvery is how often one replica prunes history.
	DefaultPruneEvery = time.Hour
	// DefaultSchedulePollEvery is how often a replica reads the stored
	// schedules' change log when the store does not tell it of changes.
	DefaultSchedulePollEvery = 2 * time.Second
	// DefaultMaxBackfillSlots bounds the slots of one backfill's range
	// when Config.MaxBackfillSlots is zero.
	DefaultMaxBackfillSlots = 10_000
	// DefaultShutdownGrace is how long Stop lets running handlers finish
	// before cancelling them.
	DefaultShutdownGrace = 30 * time.Second
	// DefaultMaxSleep bounds one sleep of the scheduler, so a suspended host
	// or a jump of the clock is noticed within it.
	DefaultMaxSleep = time.Second
	// DefaultClockCheckEvery is how often the offset of this replica's clock
	// from the database clock is measured.
	DefaultClockCheckEvery = time.Minute
	// DefaultResumeEvery is how often a replica looks for runs that died
	// mid-way (their owner crashed or lost its lease) to resume them.
	DefaultResumeEvery = 500 * time.Millisecond
	// ClockOffsetWarning is the offset from the database clock above which a
	// replica logs a warning.
	ClockOffsetWarning = time.Second
	// DefaultStoreTimeout is the default of Config.StoreTimeout.
	DefaultStoreTimeout = 10 * time.Second
	// DefaultClaimGrace is the default of Config.ClaimGrace.
	DefaultClaimGrace = 200 * time.Millisecond
	// MaxClaimGrace bounds Config.ClaimGrace: a slot whose preferred
	// replica is gone starts at most twice this late.
	MaxClaimGrace = 2 * time.Second
	// DefaultHeartbeatEvery is how often a replica records itself in the
	// replica registry when Config.HeartbeatEvery is zero.
	DefaultHeartbeatEvery = 10 * time.Second
)

// Defaults of the absence checks (see docs/alerts.md).
const (
	// DefaultCheckEvery is how often one replica runs the absence checks.
	DefaultCheckEvery = 15 * time.Second
	// DefaultSkipStreak is how many skips in a row a job may have before
	// more raise a skip_streak alert.
	DefaultSkipStreak = 3
	// DefaultFailingSlots is how many slots in a row of a job that ended
	// failed raise a failing alert.
	DefaultFailingSlots = 3
	// DefaultClockOffsetAlert is how far a replica's clock may be from the
	// database clock before a clock_offset alert.
	DefaultClockOffsetAlert = 2 * time.Second
	// DefaultOrphanWindow is how long after its last heartbeat a replica
	// that died makes orphans of its jobs (see AlertThresholds.OrphanWindow).
	DefaultOrphanWindow = 24 * time.Hour
)

// Config configures a Scheduler. Store is required; every other field has a
// default.
type Config struct {
	// Store coordinates the replicas: postgres.New or sqlite.Open, migrated.
	Store store.Store

	// Owner identifies this process in leases, claims and runs. It must be
	// unique per process incarnation. Defaults to OwnerID().
	Owner string

	// Logger receives the scheduler's structured logs. Defaults to
	// slog.Default().
	Logger *slog.Logger

	// Clock drives the scheduler's timers. Defaults to the process clock.
	Clock Clock

	// Exclude lists times no job runs in, with the syntax of Job.Exclude,
	// read in each job's zone, besides each job's own. Every replica should
	// list the same.
	Exclude []string

	// Retention is how long runs and claims are kept; each job's latest
	// claim is kept whatever its age. Negative disables pruning. Defaults to
	// DefaultRetention (7 days).
	Retention time.Duration

	// PruneEvery is how often one replica (under a lease) prunes. Defaults to
	// DefaultPruneEvery (1 hour).
	PruneEvery time.Duration
	// SchedulePollEvery is how often the replica reads the stored
	// schedules' change log (Scheduler.Schedules) when the store does not
	// tell it of changes. On PostgreSQL every change is told at once
	// (LISTEN/NOTIFY), and the log is read when told, after a broken
	// connection, and every 5 minutes besides; this period applies while
	// the replica does not hear (and on SQLite and MySQL always). Defaults
	// to DefaultSchedulePollEvery (2s); negative reads the stored
	// schedules only at Start and when told.
	SchedulePollEvery time.Duration

	// MaxBackfillSlots bounds how many slots the range of one backfill
	// (Scheduler.Backfill) may hold: a wider range is refused, naming its
	// count. Defaults to DefaultMaxBackfillSlots (10,000); at most
	// store.MaxBackfillSlots.
	MaxBackfillSlots int

	// ShutdownGrace is how long Stop lets running handlers finish before
	// cancelling their contexts. Defaults to DefaultShutdownGrace (30s).
	ShutdownGrace time.Duration

	// MaxSleep bounds one sleep of the scheduler. Defaults to
	// DefaultMaxSleep (1s).
	MaxSleep time.Duration

	// ClockCheckEvery is how often the offset from the database clock is
	// measured. A replica with a registry row takes the measurement from
	// its next heartbeat's answer, which the database stamps with its
	// clock (so at most HeartbeatEvery later, and at no round trip of its
	// own), unless that heartbeat was much slower than a clock read.
	// Defaults to DefaultClockCheckEvery (1 minute).
	ClockCheckEvery time.Duration

	// DisableTimers starts the scheduler without firing anything: the
	// process serves manual runs (Trigger) and pauses (SetEnabled) while
	// other replicas (workers) run the timers. Defaults to false.
	DisableTimers bool

	// ResumeEvery is how often this replica looks for slots whose run died
	// mid-way and resumes them (one cheap query). Negative disables it.
	// Defaults to DefaultResumeEvery (500ms).
	ResumeEvery time.Duration

	// HeartbeatEvery is how often this replica records itself in the
	// replica registry, when the store keeps one (implements
	// store.Monitor): host, PID, Version, start time, clock offset and its
	// jobs with a hash of their settings, for the API, the dashboard and
	// the config drift check. The heartbeat is also sent at Start and
	// after Register adds a job, from the scheduler's loop on Clock (a
	// replica with DisableTimers runs that loop too, for this and the
	// clock check only); Stop removes the row. Negative disables the registry for this
	// replica. Defaults to DefaultHeartbeatEvery (10s).
	HeartbeatEvery time.Duration

	// Version is this replica's version as the replica registry shows it.
	// Defaults to the main module's version from the build information,
	// or "devel+" and the VCS revision for a build from a source tree.
	Version string

	// Observer is told of claims, runs, skips, lost leases, fence
	// refusals, clock measurements and alerts as they happen, for metrics
	// and alert delivery (see Observer). It is called synchronously from
	// the scheduler's goroutines and must not block. Defaults to nil:
	// nothing is observed.
	Observer Observer

	// CheckEvery is how often the absence checks run (docs/alerts.md): a
	// slot that missed its deadline, a stuck lease, a streak of skips, a
	// slow run, config drift, an orphan job, a skewed clock. One replica at
	// a time runs them, under the lease "cronfence:monitor"; the alerts are
	// kept in the store, so every replica and the API see the same. Only
	// for stores that implement store.Monitor, on replicas with a registry
	// row (HeartbeatEvery not negative) and timers. Negative disables the
	// checks on this replica. Defaults to DefaultCheckEvery (15s).
	CheckEvery time.Duration

	// Alerts tunes the absence checks. Zero fields take their defaults.
	Alerts AlertThresholds

	// StoreTimeout bounds each store round trip the scheduler makes on its
	// own (claims, clock reads, heartbeats, scans for dead runs, the
	// absence checks), in real time (not on Clock: it bounds how long
	// the database takes to answer). A database that accepts connections
	// but does not answer (a hung server, a lock, a half-open network)
	// then counts as down once it passes, as a refused connection does:
	// RunWhenStoreDown jobs run with a warning, the other slots are left
	// to catch-up, and the first failure and the recovery are logged once
	// each (a failure that goes on, once a minute). It must leave room for the largest claim this replica makes
	// (thousands of jobs due at one instant take seconds). The end of a
	// run has its own bound (a third of the lease TTL) and is retried; a
	// lease renewal is bounded by the lease's expiry; a prune, which runs
	// beside the loop and may delete an hour of a busy cluster's history,
	// deletes in steps for as long as it holds its retention lease,
	// renewed after each step, and a step is bounded by that lease (4
	// minutes). Defaults to DefaultStoreTimeout (10s).
	StoreTimeout time.Duration

	// ClaimGrace is how long a replica that is not a slot's preferred
	// waits for the preferred's claim before it claims the slot itself,
	// on a store that tells the replicas of each other's claims
	// (store.Notices: PostgreSQL). The second replica for the slot waits
	// this long, every other twice as long; the claim they then send is
	// the same atomic claim, so a slot still runs once. Its cost: a slot
	// whose preferred replica died (and is not yet stale in the
	// registry) or hangs starts this much later. Negative turns preferred
	// claims off: every replica claims every slot at once, and scans for
	// dead runs every ResumeEvery (see docs/design.md, "Who claims").
	// Defaults to DefaultClaimGrace (200ms); at most MaxClaimGrace.
	ClaimGrace time.Duration
}

func (c *Config) withDefaults() Config {
	out := *c
	if out.Owner == "" {
		out.Owner = OwnerID()
	}
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	if out.Clock == nil {
		out.Clock = clock.Real{}
	}
	if out.Retention == 0 {
		out.Retention = DefaultRetention
	}
	if out.SchedulePollEvery == 0 {
		out.SchedulePollEvery = DefaultSchedulePollEvery
	}
	if out.MaxBackfillSlots == 0 {
		out.MaxBackfillSlots = DefaultMaxBackfillSlots
	}
	if out.PruneEvery == 0 {
		out.PruneEvery = DefaultPruneEvery
	}
	if out.ShutdownGrace == 0 {
		out.ShutdownGrace = DefaultShutdownGrace
	}
	if out.MaxSleep == 0 {
		out.MaxSleep = DefaultMaxSleep
	}
	if out.ClockCheckEvery == 0 {
		out.ClockCheckEvery = DefaultClockCheckEvery
	}
	if out.ResumeEvery == 0 {
		out.ResumeEvery = DefaultResumeEvery
	}
	if out.HeartbeatEvery == 0 {
		out.HeartbeatEvery = DefaultHeartbeatEvery
	}
	if out.Version == "" {
		out.Version = registry.BuildVersion()
	}
	if out.CheckEvery == 0 {
		out.CheckEvery = DefaultCheckEvery
	}
	if out.StoreTimeout == 0 {
		out.StoreTimeout = DefaultStoreTimeout
	}
	if out.ClaimGrace == 0 {
		out.ClaimGrace = DefaultClaimGrace
	}
	out.Alerts = out.Alerts.withDefaults(out)
	return out
}

// withDefaults fills the zero thresholds.
func (t AlertThresholds) withDefaults(c Config) AlertThresholds {
	if t.SkipStreak == 0 {
		t.SkipStreak = DefaultSkipStreak
	}
	if t.FailingSlots == 0 {
		t.FailingSlots = DefaultFailingSlots
	}
	if t.ClockOffset == 0 {
		t.ClockOffset = DefaultClockOffsetAlert
	}
	if t.ReplicaStale == 0 {
		// A replica without a registry row (HeartbeatEvery negative) runs
		// no checks, so any positive period will do for it.
		every := c.HeartbeatEvery
		if every <= 0 {
			every = DefaultHeartbeatEvery
		}
		t.ReplicaStale = 3 * every
	}
	if t.OrphanWindow == 0 {
		t.OrphanWindow = DefaultOrphanWindow
	}
	return t
}

// validate checks a config with its defaults applied (withDefaults), so a
// default is held to the same rules as a value given.
func (c *Config) validate() error {
	switch {
	case c.Store == nil:
		return errInvalid("Config.Store is required")
	case c.PruneEvery < 0:
		return errInvalid(fmt.Sprintf("Config.PruneEvery must not be negative, got %s", c.PruneEvery))
	case c.ShutdownGrace < 0:
		return errInvalid(fmt.Sprintf("Config.ShutdownGrace must not be negative, got %s", c.ShutdownGrace))
	case c.MaxSleep < 0:
		return errInvalid(fmt.Sprintf("Config.MaxSleep must not be negative, got %s", c.MaxSleep))
	case c.ClockCheckEvery < 0:
		return errInvalid(fmt.Sprintf("Config.ClockCheckEvery must not be negative, got %s", c.ClockCheckEvery))
	case len(c.Version) > store.MaxReplicaTextBytes:
		return errInvalid(fmt.Sprintf("Config.Version must be at most %d bytes, got %d", store.MaxReplicaTextBytes, len(c.Version)))
	case c.CheckEvery > 0 && c.CheckEvery < time.Second:
		return errInvalid(fmt.Sprintf("Config.CheckEvery must be at least 1s (or negative to disable), got %s", c.CheckEvery))
	case c.CheckEvery > store.MaxTTL/2:
		// The checks' lease lasts two periods and no lease may outlast MaxTTL.
		return errInvalid(fmt.Sprintf("Config.CheckEvery must be at most %s, got %s", store.MaxTTL/2, c.CheckEvery))
	case c.StoreTimeout < 0:
		return errInvalid(fmt.Sprintf("Config.StoreTimeout must not be negative, got %s", c.StoreTimeout))
	case c.ClaimGrace > MaxClaimGrace:
		return errInvalid(fmt.Sprintf("Config.ClaimGrace must be at most %s (or negative to claim every slot at once), got %s", MaxClaimGrace, c.ClaimGrace))
	case c.MaxBackfillSlots < 0 || c.MaxBackfillSlots > store.MaxBackfillSlots:
		return errInvalid(fmt.Sprintf("Config.MaxBackfillSlots must be from 1 to %d (0 for the default), got %d", store.MaxBackfillSlots, c.MaxBackfillSlots))
	case c.Alerts.ReplicaStale < 0:
		return errInvalid(fmt.Sprintf("Config.Alerts.ReplicaStale must not be negative, got %s", c.Alerts.ReplicaStale))
	}
	if err := store.ValidateName("Config.Owner", c.Owner); err != nil {
		return fmt.Errorf("cronfence: %w", err)
	}
	if _, err := schedule.ParseExclusions(c.Exclude, time.UTC); err != nil {
		return errInvalid(fmt.Sprintf("Config.Exclude: %v", err))
	}
	return nil
}

// OwnerID returns this process's owner id for leases: host:pid:random. It is
// unique per process incarnation, never just the host name, so a restarted
// process (same host, maybe the same pid in a container) is a new owner and
// cannot renew or release what its previous incarnation held.
func OwnerID() string { return ownerID() }

var ownerID = sync.OnceValue(newOwnerID)

func newOwnerID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	if len(host) > 64 {
		host = host[:64]
	}
	return host + ":" + strconv.Itoa(os.Getpid()) + ":" + randomHex(6)
}

// randomHex is n random bytes in hex: a suffix that makes an id unique.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}
