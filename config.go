package cronfence

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
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

	// Retention is how long runs and claims are kept; each job's latest
	// claim is kept whatever its age. Negative disables pruning. Defaults to
	// DefaultRetention (7 days).
	Retention time.Duration

	// PruneEvery is how often one replica (under a lease) prunes. Defaults to
	// DefaultPruneEvery (1 hour).
	PruneEvery time.Duration

	// ShutdownGrace is how long Stop lets running handlers finish before
	// cancelling their contexts. Defaults to DefaultShutdownGrace (30s).
	ShutdownGrace time.Duration

	// MaxSleep bounds one sleep of the scheduler. Defaults to
	// DefaultMaxSleep (1s).
	MaxSleep time.Duration

	// ClockCheckEvery is how often the offset from the database clock is
	// measured. Defaults to DefaultClockCheckEvery (1 minute).
	ClockCheckEvery time.Duration

	// DisableTimers starts the scheduler without firing anything: the
	// process serves manual runs (Trigger) and pauses (SetEnabled) while
	// other replicas (workers) run the timers. Defaults to false.
	DisableTimers bool

	// ResumeEvery is how often this replica looks for slots whose run died
	// mid-way and resumes them (one cheap query). Negative disables it.
	// Defaults to DefaultResumeEvery (500ms).
	ResumeEvery time.Duration
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
	return out
}

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
	}
	if c.Owner != "" {
		if err := store.ValidateName("Config.Owner", c.Owner); err != nil {
			return fmt.Errorf("cronfence: %w", err)
		}
	}
	return nil
}
