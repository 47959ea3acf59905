package store

import (
	"context"
	"time"
)

// Store is the boundary between cronfence and a database. Every method is one
// round trip on the happy path (see the method comments for the rare
// exceptions), and all lease timing is decided by the database clock unless a
// caller pins it with a Now field.
//
// A Store is safe for concurrent use.
type Store interface {
	// Migrate brings the schema up to the version this binary knows. It is safe
	// to call from many processes at once: one applies each migration, the
	// others wait and then find nothing to do. It refuses, with
	// ErrSchemaTooNew, a database migrated by a newer binary.
	Migrate(ctx context.Context) error

	// SchemaVersion reports the version recorded in the database (0 when the
	// schema was never migrated) and the newest version this binary knows.
	SchemaVersion(ctx context.Context) (database, binary int, err error)

	// Now returns the database clock, the authority for every lease.
	Now(ctx context.Context) (time.Time, error)

	// LeaseAcquire takes the named lease if it is free or expired, in one
	// atomic statement, and returns it with a generation one higher than any
	// before it under this name. When another owner holds an unexpired lease
	// it returns acquired == false and, as lease, the holder as last seen
	// (zero when it could not be seen).
	LeaseAcquire(ctx context.Context, p LeaseAcquireParams) (lease Lease, acquired bool, err error)

	// LeaseRenew extends a lease held by p.Owner at p.Generation that has not
	// expired. It returns ErrLeaseLost when no such lease exists: the caller
	// must stop working under it at once.
	LeaseRenew(ctx context.Context, p LeaseRenewParams) (Lease, error)

	// LeaseRelease expires a lease held by ref.Owner at ref.Generation. The row
	// is kept so the generation never goes back. It returns false, without
	// error, when the lease is no longer this owner's: a late release never
	// touches a newer holder.
	LeaseRelease(ctx context.Context, ref LeaseRef) (released bool, err error)

	// LeaseGet returns the named lease, expired or not, or ErrNotFound.
	LeaseGet(ctx context.Context, name string) (Lease, error)

	// LeaseFence checks, inside the caller's own transaction tx, that the
	// generation still holds an unexpired lease under name, and keeps it that
	// way until tx ends (a takeover waits for the commit). It returns
	// ErrLeaseLost when fenced out and ErrUnsupportedTx for a transaction type
	// this store cannot use. Each store documents the types it accepts.
	LeaseFence(ctx context.Context, tx any, name string, generation int64) error

	// SlotClaim claims one (job, slot) for a run: in one atomic statement it
	// takes the lease p.LeaseName and records the claim, or refuses with a
	// ClaimRefusal. A completed slot is never claimed again; an interrupted or
	// failed one can be, with attempts + 1, while attempts stay below
	// p.MaxAttempts. In the rare race where the lease was taken but the slot
	// was completed by a concurrent finisher, the store releases the lease
	// again before returning (a second round trip).
	SlotClaim(ctx context.Context, p SlotClaimParams) (SlotClaimResult, error)

	// SlotFinish ends a claimed run in one round trip: the slot is marked
	// completed or failed (only if p.Owner still holds it at p.Generation),
	// the lease is released (under the same condition) and the run row is
	// written whatever happened, since it records a fact.
	SlotFinish(ctx context.Context, p SlotFinishParams) (SlotFinishResult, error)

	// SlotGet returns the claim of (job, slot) or ErrNotFound.
	SlotGet(ctx context.Context, job string, slot time.Time) (Slot, error)

	// RunInsert writes one run row, typically a skip, and returns it with its
	// id. A zero StartedAt defaults to the database clock and a zero
	// FinishedAt to StartedAt (a skip takes no time).
	RunInsert(ctx context.Context, run Run) (Run, error)

	// RunList returns run rows, newest first.
	RunList(ctx context.Context, p RunListParams) ([]Run, error)

	// Prune deletes slots and runs older than p.Before, always keeping the
	// latest claim and the latest run of each job.
	Prune(ctx context.Context, p PruneParams) (PruneResult, error)

	// Close releases what the store opened itself. A store built on a pool
	// the caller owns leaves that pool open. Any call after Close returns
	// ErrClosed.
	Close() error
}

// Lease is one row of the leases table.
type Lease struct {
	Name       string
	Owner      string
	Generation int64 // the fencing token: strictly increasing per name, never reset
	AcquiredAt time.Time
	RenewedAt  time.Time
	ExpiresAt  time.Time
}

// Ref returns the identity of this holding of the lease.
func (l Lease) Ref() LeaseRef {
	return LeaseRef{Name: l.Name, Owner: l.Owner, Generation: l.Generation}
}

// LeaseRef names one holding of a lease: who held it under which generation.
type LeaseRef struct {
	Name       string
	Owner      string
	Generation int64
}

// LeaseAcquireParams are the arguments of Store.LeaseAcquire.
type LeaseAcquireParams struct {
	Name  string
	Owner string
	TTL   time.Duration
	Now   time.Time // pins the clock for this call; zero means the database clock
}

// LeaseRenewParams are the arguments of Store.LeaseRenew.
type LeaseRenewParams struct {
	LeaseRef
	TTL time.Duration
	Now time.Time // pins the clock for this call; zero means the database clock
}

// SlotStatus is the state of one (job, slot) claim.
type SlotStatus string

const (
	// SlotRunning: claimed, not finished. If the lease that guards it
	// expires, the slot may be claimed again.
	SlotRunning SlotStatus = "running"
	// SlotCompleted: the window is done and never runs again.
	SlotCompleted SlotStatus = "completed"
	// SlotFailed: the run ended with an error; it may be claimed again while
	// attempts remain.
	SlotFailed SlotStatus = "failed"
)

// Slot is one row of the slots table: the claim of one scheduled occurrence.
type Slot struct {
	Job        string
	Slot       time.Time // the intended occurrence, never the start time
	Status     SlotStatus
	Owner      string
	LeaseName  string
	Generation int64
	Attempts   int
	StartedAt  time.Time
	FinishedAt time.Time // zero while running
}

// SlotClaimParams are the arguments of Store.SlotClaim.
type SlotClaimParams struct {
	Job         string
	Slot        time.Time
	LeaseName   string // the lease that guards the run
	Owner       string
	TTL         time.Duration // of the lease
	MaxAttempts int           // at least 1
	Now         time.Time     // pins the clock for this call; zero means the database clock
}

// ClaimRefusal says why a slot was not claimed.
type ClaimRefusal string

const (
	ClaimCompleted         ClaimRefusal = "completed"          // the slot already completed
	ClaimHeld              ClaimRefusal = "already_executing"  // the lease is held by another owner
	ClaimAttemptsExhausted ClaimRefusal = "attempts_exhausted" // no attempts left
	ClaimNotDue            ClaimRefusal = "not_due"            // the slot is in the future by the database clock
)

// SlotClaimResult is what Store.SlotClaim returns.
type SlotClaimResult struct {
	Claimed bool
	Refusal ClaimRefusal // empty when Claimed
	// Slot is the new claim when Claimed, otherwise the existing row as last
	// seen (zero when there was none).
	Slot Slot
	// Lease is the lease taken when Claimed; with ClaimHeld it is the holder
	// as last seen.
	Lease Lease
}

// SlotFinishParams are the arguments of Store.SlotFinish.
type SlotFinishParams struct {
	Job        string
	Slot       time.Time
	LeaseName  string
	Owner      string
	Generation int64
	Status     SlotStatus // SlotCompleted or SlotFailed
	Run        Run        // the run row to write; job, slot, owner and generation are taken from above
	Now        time.Time  // pins the clock for this call; zero means the database clock
}

// SlotFinishResult is what Store.SlotFinish returns.
type SlotFinishResult struct {
	SlotUpdated   bool // false when the slot was no longer this owner's
	LeaseReleased bool // false when the lease was no longer this owner's
	Run           Run  // the row written
}

// Run is one row of the runs table: an execution or a recorded skip.
type Run struct {
	ID         int64
	Job        string
	Slot       time.Time // zero for a manual run
	Manual     bool
	CatchUp    bool
	Owner      string
	Generation int64 // zero when no lease was held (a skip)
	Attempt    int
	StartedAt  time.Time
	FinishedAt time.Time
	Success    bool
	Skipped    bool
	Reason     string // why a run was skipped, e.g. "already_executing"
	Error      string
	Logs       []string // bounded by MaxRunLogLines and MaxRunLogBytes
}

// RunListParams are the arguments of Store.RunList.
type RunListParams struct {
	Job      string // empty for all jobs
	Limit    int    // at most MaxRunListLimit; 0 means DefaultRunListLimit
	BeforeID int64  // page on: only rows with a smaller id; 0 for the newest
}

// PruneParams are the arguments of Store.Prune.
type PruneParams struct {
	Before time.Time // rows older than this go, except each job's latest
}

// PruneResult counts what Store.Prune deleted.
type PruneResult struct {
	Slots int64
	Runs  int64
}
