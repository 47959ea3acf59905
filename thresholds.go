package cronfence

import (
	"time"

	"github.com/cronfence/cronfence/internal/absence"
)

// AlertThresholds tune the absence checks (docs/alerts.md).
type AlertThresholds struct {
	// SkipStreak: a job whose newest runs are more than this many skips in
	// a row raises skip_streak. Negative disables the check. Defaults to
	// DefaultSkipStreak (3).
	SkipStreak int
	// FailingSlots: a job whose last this many slots ended failed (each
	// after its last attempt) raises failing, resolved by the job's next
	// slot that succeeds. Negative disables the check. Defaults to
	// DefaultFailingSlots (3).
	FailingSlots int
	// ClockOffset: a live replica whose clock was measured further than
	// this from the database clock raises clock_offset. Negative disables
	// the check. Defaults to DefaultClockOffsetAlert (2s).
	ClockOffset time.Duration
	// ReplicaStale: a replica whose last heartbeat is older than this is
	// not live: its jobs count neither for drift nor as registered (a job
	// only it registers is an orphan), and its clock is not judged.
	// Defaults to three heartbeat periods.
	ReplicaStale time.Duration
	// OrphanWindow: a job that a replica which died registered (its
	// registry row left behind, its heartbeat lapsed) and no live replica
	// registers raises orphan_job for this long after that replica's last
	// heartbeat. A job whose replicas stopped cleanly is retired and raises
	// nothing. Negative disables the check. Defaults to DefaultOrphanWindow
	// (24h).
	OrphanWindow time.Duration
}

// absence converts the thresholds, with defaults applied, to the checks':
// a negative threshold turns its check off (zero there). retention is
// Config.Retention, the age past which pruning may have deleted a slot
// (negative: never pruned, zero there).
func (t AlertThresholds) absence(retention time.Duration) absence.Thresholds {
	return absence.Thresholds{
		SkipStreak:   max(t.SkipStreak, 0),
		Failing:      max(t.FailingSlots, 0),
		ClockOffset:  max(t.ClockOffset, 0),
		ReplicaStale: t.ReplicaStale,
		OrphanWindow: max(t.OrphanWindow, 0),
		Retention:    max(retention, 0),
	}
}
