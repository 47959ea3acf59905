package forecast

import (
	"time"

	"github.com/cronfence/cronfence/schedule"
)

// Job is what a forecast needs of a job: its schedule and the settings
// that change when and how often it runs, with the defaults applied (the
// caller's to apply: this package knows no config file).
type Job struct {
	Name     string
	Schedule schedule.Schedule
	// Jitter bounds each slot's start delay (jitter.Delay); zero for none.
	Jitter time.Duration
	// Exclusions hold the slots the job does not run; nil for none.
	Exclusions *schedule.Exclusions
	// Timeout and Deadline: zero for none. LeaseTTL: the run's lease.
	Timeout, Deadline, LeaseTTL time.Duration
	// CatchUp is "none", "latest" or "all"; CatchUpWindow how late a
	// missed slot still runs; MaxCatchUp, with "all", how many of the
	// most recent slots catch-up looks at.
	CatchUp       string
	CatchUpWindow time.Duration
	MaxCatchUp    int
	// CompletesInTx: the command completes its slot inside its own
	// fenced transaction, so a second holder of its slot cannot commit
	// the effect twice.
	CompletesInTx bool
}
