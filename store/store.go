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
	// Monitor is the replica registry and the alerts of absence
	// monitoring, which every store keeps.
	Monitor

	// Schedules are the stored schedules and their change log.
	Schedules

	// Backfills are the jobs' backfills and the slot listing they read.
	Backfills

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

	// LeaseRenewBatch renews many leases in one round trip, as a replica
	// does for every lease it holds. It returns the leases renewed; one
	// missing from the result was lost (as ErrLeaseLost from LeaseRenew).
	// Items must share Now.
	LeaseRenewBatch(ctx context.Context, items []LeaseRenewParams) ([]Lease, error)

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

	// SlotComplete marks the slot that the holding (p.LeaseName,
	// p.Generation) runs as completed, inside the caller's own transaction
	// tx, after fencing tx as LeaseFence does: the handler's effect and the
	// slot's completion commit together or not at all, and a slot so
	// completed is never claimed or resumed again. The run's SlotFinish
	// afterwards keeps the slot completed, whatever the handler returns, and
	// records the run. It returns ErrLeaseLost when fenced out (roll back)
	// and ErrUnsupportedTx as LeaseFence does. With a zero p.Slot (a manual
	// run, which has no slot) it only fences; a slot already completed by
	// the holding is left as it is.
	SlotComplete(ctx context.Context, tx any, p SlotCompleteParams) error

	// SlotClaim claims one (job, slot) for a run: in one atomic statement it
	// reads the job's pause state, takes the lease p.LeaseName and records
	// the claim, or refuses with a ClaimRefusal. A completed or skipped slot
	// is never claimed again; an interrupted or buffered one can be, with
	// attempts + 1, while attempts stay below p.MaxAttempts, and so can a
	// failed one, by a claim that means to retry it (p.RetryFailed): any
	// other claim of a failed slot is refused ClaimFailed, so a replica
	// whose timer fired after the slot's run failed does not run it again
	// at once.
	//
	// When the pause overrides cannot be read (their table is missing or
	// damaged), the declared values decide and each result says so
	// (PauseStateUnread), rather than the claim failing: a broken pause
	// table must not stop every job.
	//
	// A due slot of a paused job is refused with ClaimPaused and, in the same
	// statement, settled: when it has no row yet it is recorded skipped,
	// with a skip run row of reason "paused" (ClaimPaused) as an overlap
	// has one, written once across replicas, so a claim that arrives after
	// the resume (a replica whose clock runs behind, a retry, catch-up) is
	// refused with ClaimSkipped instead of running a slot that came due
	// during the pause, and the slot's history says why it did not run. An
	// existing row is left as it is.
	//
	// When the lease is held by another run (an overlap: the previous slot's
	// run or a manual run), the slot is recorded once across replicas
	// according to p.Overlap: skipped, with a skip run row naming the holder,
	// or buffered. A holder that took the lease after the slot came due is
	// no overlap, whatever p.Overlap: the lease was free at the slot's
	// instant and the claim only arrived late (a catch-up or resumed run of
	// an earlier slot started first, as after a store outage). That slot is
	// buffered, to run when the holder ends (skipped only when the job has a
	// buffered slot already). In the rare race where the lease was taken but the slot was
	// completed by a concurrent finisher, the store releases the lease again
	// before returning (a second round trip).
	SlotClaim(ctx context.Context, p SlotClaimParams) (SlotClaimResult, error)

	// SlotClaimBatch claims many (job, slot)s in one round trip, as a replica
	// does for every job due at the same instant: each item behaves as
	// SlotClaim would, and the results come back in the items' order. Items
	// must name distinct lease names and share Owner, LiveKey and Now.
	SlotClaimBatch(ctx context.Context, items []SlotClaimParams) ([]SlotClaimResult, error)

	// SlotFinish ends a claimed run in one round trip: the slot is marked
	// completed or failed (only if p.Owner still holds it at p.Generation),
	// the lease is released (under the same condition) and the run row is
	// written whatever happened, since it records a fact. When the slot was
	// not marked (SlotUpdated false: it was taken over), the row says so
	// instead of passing for the slot's result: Success false, and an error
	// naming the takeover, followed by p.Run.Error if any. With a zero
	// p.Slot it ends a manual run: lease and run row only. The result names
	// the job's buffered slot, if one waits for this run to end.
	//
	// A slot that this holding already completed (by SlotComplete in the
	// handler's transaction, or by an earlier SlotFinish) stays completed
	// and counts as marked. It is safe to call again when an attempt's
	// answer was lost: a holding has at most one run row of its own, and a
	// repeated call writes no second one but returns the first. (The row
	// SlotAbandon writes about a dead holding is not its own.)
	SlotFinish(ctx context.Context, p SlotFinishParams) (SlotFinishResult, error)

	// SlotFinishBatch ends many runs in one round trip and one
	// transaction: each item as SlotFinish would, the results in the
	// items' order. They commit together or not at all, so a failed
	// batch is safe to retry whole or item by item (a holding writes one
	// run row). An invalid item fails the whole call, naming the item,
	// before anything is sent. A replica ends the runs that finished
	// while its last batch was in flight this way (group commit).
	SlotFinishBatch(ctx context.Context, items []SlotFinishParams) ([]SlotFinishResult, error)

	// SlotListInterrupted returns the running slots whose run is dead: its
	// lease expired, was taken over, or (where the store has liveness) its
	// owner's process is gone. A replica claims them again (attempt + 1)
	// without waiting for a later slot. It also returns the failed slots
	// still open to a retry (SlotFinishParams.RetryUntil not passed), with
	// status SlotFailed: the caller retries those once their backoff from
	// FinishedAt has passed.
	SlotListInterrupted(ctx context.Context) ([]Slot, error)

	// SlotAbandon ends as failed a running slot whose run is dead (as
	// SlotListInterrupted judges it, and for at least p.Grace) and that
	// has no attempt left (its attempts reached p.MaxAttempts): nobody may
	// claim it again, so without this it would stay running for good. Only the dead claim
	// (p.Owner at p.Generation) is ended, and only while it is still dead,
	// so exactly one of several replicas abandons it and an owner that
	// finishes first wins. The dead holding's run row is written only when
	// the slot was marked (SlotUpdated says whether it was), as
	// RunInterrupted writes it: interrupted, attempt and start taken from
	// the slot, p.Error followed by how the run was found dead, p.Logs,
	// and its end; a holding has one run row, so when it has one already
	// that row is kept and returned. LeaseReleased is always false (the
	// lease is dead already and is left as it is); Buffered is as
	// SlotFinish's, the job's slot that waited for this run.
	SlotAbandon(ctx context.Context, p SlotAbandonParams) (SlotFinishResult, error)

	// RunInterrupted records, in one round trip, attempts whose run died
	// without recording its end (its process was killed, or it lost its
	// lease and could not tell), as SlotListInterrupted listed their
	// slots: a replica calls it for the slots it is about to resume. For
	// each item whose slot is still running under that holding (lease
	// name, owner, generation) and whose run is still dead, as
	// SlotListInterrupted judges it, it writes the holding's run row: not
	// a success, Reason ReasonInterrupted, the owner, attempt and start of
	// the slot row, the item's Error and Log, the error followed by how
	// the store found the run dead (DeadLeaseExpired, DeadOwnerGone,
	// DeadLeaseTaken; see InterruptedError), and as its end the lease's
	// expiry when it expired, otherwise the database clock. A holding has
	// one run row: of several replicas recording it at once one writes it,
	// and a row the holding has already is kept (its owner's own end,
	// when it came first). It returns each recorded item's row, the one
	// written or the one kept, in the items' order; items not recorded
	// (alive again, or their slot no longer running under that holding)
	// are left out, and so may be one whose row another call wrote at the
	// same instant.
	RunInterrupted(ctx context.Context, items []RunInterruptedParams) ([]Run, error)

	// SlotSkip records, in one round trip (more only while it gives way to
	// a claim writing some of the same slots, or is retried after a
	// deadlock), slots that nobody will run, each with its reason: given
	// up because a deposed writer held its lease until a later slot was due
	// (SkipLeaseBusy), passed over because the scheduler could not fire it
	// in time and fired a later slot instead (SkipPassedOver), or inside an
	// exclusion window (SkipExcluded). An item is recorded only when its slot has
	// no row (a replica that claimed, ran or recorded it wins) and the
	// database clock has reached its After; its slot is then final,
	// skipped (a later claim is refused ClaimSkipped), and a skip run row
	// with the reason and the log line is written. Concurrent calls record
	// each slot once. It returns the run rows written, in the items'
	// order; items not recorded are left out.
	SlotSkip(ctx context.Context, items []SlotSkipParams) ([]Run, error)

	// SlotGet returns the claim of (job, slot) or ErrNotFound.
	SlotGet(ctx context.Context, job string, slot time.Time) (Slot, error)

	// RunInsert writes one run row, typically a skip, and returns it with its
	// id. A zero StartedAt defaults to the database clock and a zero
	// FinishedAt to StartedAt (a skip takes no time).
	RunInsert(ctx context.Context, run Run) (Run, error)

	// RunList returns run rows newest first: by when they started, the
	// latest first, and the rows of one instant by id, the highest first
	// (a total order, so paging with RunListParams.Before neither repeats
	// nor skips a row). A run's row is written when it ends, so this is
	// not the order they were written in: the skips of slots that came
	// due while a run ran come before its row.
	RunList(ctx context.Context, p RunListParams) ([]Run, error)

	// RunGet returns the run row of one holding (lease name, generation),
	// the row its end wrote, or ErrNotFound when it has none (yet): a run
	// asked for by the holding it was started under, however many rows
	// came after it.
	RunGet(ctx context.Context, leaseName string, generation int64) (Run, error)

	// RunListPerJob returns each job's newest runs (at most p.Limit,
	// newest first), in the jobs' order, in one round trip: what the
	// absence checks read of every job at every pass. A job with no run
	// has an empty list.
	RunListPerJob(ctx context.Context, p RunListPerJobParams) ([][]Run, error)

	// Prune deletes slots and runs older than p.Before, always keeping the
	// latest claim and the latest run of each job. It deletes in steps of
	// at most p.Batch slots and p.Batch runs, each a transaction of its
	// own, so a history of any size is pruned in short transactions and
	// what a step deleted stays deleted when a later step fails or ctx
	// ends: the result then counts the steps that committed, beside the
	// error.
	Prune(ctx context.Context, p PruneParams) (PruneResult, error)

	// JobRegister records that the jobs are registered: a job not seen
	// before is first seen now, by the database clock (or, for a job
	// that has slots from before this record existed, at its earliest
	// slot). It returns when each job was first seen, in the order given.
	// Catch-up never runs a slot from before then.
	JobRegister(ctx context.Context, p JobRegisterParams) ([]JobRegistration, error)

	// JobStateSet sets or clears (Enabled == nil) the override of a job's
	// declared enabled value, recording who and when. Every replica reads it
	// before claiming; it survives restarts. Once it returns, no slot due
	// after that is claimed on the old value, however early its claim was
	// sent (SlotClaimParams.WaitDue): a claim waiting for its slot either
	// reads the new value or came first, and JobStateSet waits for it; a
	// claim of the job that committed ahead of its slot (SlotClaimResult.
	// Wait) came first, and JobStateSet returns only once that slot is
	// due, so the pause was acknowledged after it.
	JobStateSet(ctx context.Context, p JobStateSetParams) (JobState, error)

	// JobStateList returns the state of every job that has one, by name.
	JobStateList(ctx context.Context) ([]JobState, error)

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
	// LiveKey, when not zero, is the owner's liveness lock (see
	// SlotClaimParams.LiveKey), recorded with the lease.
	LiveKey int64
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
	// SlotSkipped: the slot came due while another run held the job's lease
	// and the job's overlap policy is to skip, or while the job was paused.
	// Final, like completed.
	SlotSkipped SlotStatus = "skipped"
	// SlotBuffered: the slot came due during another run and waits to run
	// when that run ends (overlap policy buffer-one). Claimable.
	SlotBuffered SlotStatus = "buffered"
)

// OverlapPolicy says what SlotClaim records when the job's lease is held by
// another run.
type OverlapPolicy string

const (
	// OverlapSkip records the slot as skipped, with a skip run row naming
	// the holder. The default.
	OverlapSkip OverlapPolicy = "skip"
	// OverlapBuffer records the slot as buffered, to run when the current
	// run ends; while one slot is buffered, further ones are skipped.
	OverlapBuffer OverlapPolicy = "buffer-one"
	// OverlapWait records nothing: the claim is refused ClaimHeld, the slot
	// left without a row, for the caller to claim again once the holder is
	// done. Catch-up of every missed slot (policy all) claims this way, so
	// that its slots run one after another, none recorded as an overlap.
	OverlapWait OverlapPolicy = "wait"
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

	// DeclaredDisabled is a job declared with enabled = false. The job's
	// override (JobStateSet), when set, decides instead. A disabled job is
	// refused with ClaimPaused; a due slot of it that has no row yet is
	// recorded skipped, with its skip run row, and no lease is taken.
	DeclaredDisabled bool
	// Overlap is what to record when the lease is held by another run.
	// Empty means OverlapSkip.
	Overlap OverlapPolicy
	// CatchUp marks a claim made by catch-up; it is copied to a skip row.
	CatchUp bool
	// RetryFailed claims the slot again when its last attempt failed
	// (attempts + 1, while they stay below MaxAttempts): the retry of a
	// failed run. Without it a failed slot is refused ClaimFailed.
	RetryFailed bool
	// RetryOf, with RetryFailed, is the attempt this claim retries: the
	// failed slot is taken only while its attempts equal it, and refused
	// ClaimFailed otherwise, so a retry armed after attempt 1 failed does
	// not take the slot once another replica's retry of it failed as
	// well. Zero: whatever its attempts.
	RetryOf int
	// LiveKey, when not zero, is the key of a liveness lock the owner holds
	// for as long as its process lives (see Liveness). It is recorded with
	// the lease, and a contender may take over a lease whose owner's
	// liveness lock is free, without waiting for the TTL.
	LiveKey int64
	// WaitDue lets the claim wait, by the database clock, for this slot to
	// come due when it is at most MaxClaimWait away, instead of refusing it
	// ClaimNotDue: a claim sent a little before its slot (so that taking a
	// connection, the round trip, planning and the commit are behind it
	// when the slot comes) is judged at the slot's instant, and everything
	// it writes is dated at or after it. A batch waits for its latest
	// such slot. A slot further away is refused not_due at once, and a
	// claim with a pinned clock (Now) never waits.
	//
	// The wait is the store's or the caller's. A store may judge, write
	// and commit ahead when nothing it judges can change before the slot
	// (PostgreSQL does when none of the batch's slots has a row and none
	// of its leases is held), and answer before the slot: the result's
	// Wait then says how long the caller must still wait before the run
	// starts, and JobStateSet keeps the pause guarantee by waiting for
	// such a slot. Otherwise the store waits before the claim judges
	// anything, and answers after the slot with a zero Wait.
	WaitDue bool
}

// MaxClaimWait is the longest a claim waits for a slot to come due
// (SlotClaimParams.WaitDue): a connection held that long is cheap, and a
// replica whose clock is off by more is told not_due and measures again.
const MaxClaimWait = 100 * time.Millisecond

// ClaimRefusal says why a slot was not claimed.
type ClaimRefusal string

const (
	ClaimCompleted         ClaimRefusal = "completed"          // the slot already completed
	ClaimHeld              ClaimRefusal = "already_executing"  // the lease is held by another owner
	ClaimAttemptsExhausted ClaimRefusal = "attempts_exhausted" // no attempts left
	ClaimFailed            ClaimRefusal = "failed"             // the slot's last attempt failed, and the claim is no retry (SlotClaimParams.RetryFailed)
	ClaimNotDue            ClaimRefusal = "not_due"            // the slot is in the future by the database clock
	ClaimPaused            ClaimRefusal = "paused"             // the job is disabled (override or declared); the slot is settled as skipped
	ClaimSkipped           ClaimRefusal = "skipped"            // the slot was already recorded as skipped (an overlap, or due while paused)
	// ClaimLeaseBusy: the lease expired (or its owner is gone), but a
	// transaction fenced under it is still open, its writer frozen or cut
	// off; the takeover must wait for it, so nothing was written: try again
	// later. Lease is the deposed writer's. Only stores with row locks
	// (PostgreSQL) answer it.
	ClaimLeaseBusy ClaimRefusal = "lease_busy"
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
	// Recorded is the slot's new status when this call recorded it: an
	// overlap (SlotSkipped or SlotBuffered, with ClaimHeld), or a due slot
	// of a paused job settled (SlotSkipped, with ClaimPaused); empty
	// otherwise. Exactly one replica records each such slot.
	Recorded SlotStatus
	// SkipRun is the skip run row this call wrote, when Recorded is
	// SlotSkipped: its Reason is the refusal (already_executing or paused).
	SkipRun Run
	// PauseStateUnread reports that the job's pause override could not be
	// read (its table is missing or damaged: renamed, dropped), so the
	// job's declared enabled value decided, as if no override were set. A
	// broken pause table fails open: declared-enabled jobs keep running,
	// declared-disabled ones stay off. The caller warns.
	PauseStateUnread bool
	// Wait is how long after this answer reached the caller the claimed
	// run may start: the store committed a claim sent ahead before its
	// slot came by the database clock (SlotClaimParams.WaitDue), and this
	// is the time left to it as the database read its clock after its
	// last write. Waited on the caller's monotonic clock from when the
	// answer came, it ends at or after the slot by the database clock,
	// whatever the offset between the two clocks, since the answer left
	// after that reading. Zero when the slot was due as the store
	// answered (and for every refusal).
	Wait time.Duration
}

// SkipReason says why Store.SlotSkip gave a slot up; it is the Reason of
// the skip run row.
type SkipReason string

const (
	// SkipLeaseBusy: a deposed writer (its lease expired) stayed inside a
	// transaction fenced under the job's lease until a later slot was due
	// (for a catch-up, until its window closed), so the takeover never
	// came in time.
	SkipLeaseBusy SkipReason = "lease_busy"
	// SkipPassedOver: the scheduler could not fire the slot in time (its
	// host slept, its process was stopped, its loop stalled, its clock
	// jumped) and fired the job's latest slot instead.
	SkipPassedOver SkipReason = "passed_over"
	// SkipExcluded: the slot falls in one of its job's exclusion windows
	// (cronfence.Job.Exclude): nobody runs it.
	SkipExcluded SkipReason = "excluded"
)

// SlotSkipParams are the arguments of Store.SlotSkip, for one slot. Items
// of one call name distinct (Job, Slot)s and share Owner and Now.
type SlotSkipParams struct {
	Job       string
	Slot      time.Time
	LeaseName string // the lease a claim of the slot would take, as recorded on its row
	Owner     string // who gives the slot up
	// After is when, by the database clock, the slot was given up: the
	// later slot fired instead, or the end of a catch-up's window. Not
	// before Slot. Nothing is recorded while the database clock is before
	// it: a replica whose clock runs ahead must not settle a slot that
	// others may still claim.
	After   time.Time
	CatchUp bool // a catch-up's slot
	Reason  SkipReason
	Log     string    // the run row's log line: what happened, naming the writer or the stall
	Now     time.Time // pins the clock for this call; zero means the database clock
}

// SlotCompleteParams are the arguments of Store.SlotComplete: the slot and
// the holding of its run.
type SlotCompleteParams struct {
	Job        string
	Slot       time.Time // zero for a manual run: fence only
	LeaseName  string
	Generation int64
}

// JobRegisterParams are the arguments of Store.JobRegister.
type JobRegisterParams struct {
	Jobs []string  // distinct job names, at most MaxRegisterJobs
	Now  time.Time // pins the clock for this call; zero means the database clock
}

// JobRegistration says when a job was first registered.
type JobRegistration struct {
	Job       string
	FirstSeen time.Time
}

// SlotFinishParams are the arguments of Store.SlotFinish.
type SlotFinishParams struct {
	Job        string
	Slot       time.Time
	LeaseName  string
	Owner      string
	Generation int64
	// Status is what the slot becomes: SlotCompleted, SlotFailed, or
	// SlotRunning, which leaves it as it is for a resume (the lease is
	// released, so the next resume scan claims it, attempt + 1), unless
	// this holding completed it (SlotComplete), when it stays completed.
	// A slot this holding completed stays completed whatever Status says.
	Status SlotStatus
	Run    Run // the run row to write; job, slot, owner and generation are taken from above
	// NotCompletedError, when not empty, is the run row's error, in place
	// of Run.Error and with no success, if the slot does not end completed
	// (Status SlotRunning or SlotFailed, and this holding did not complete
	// it; with SlotRunning, also when the slot was taken over meanwhile:
	// that is the resume the run was left for). For a run whose end depends on whether its own transaction
	// completed the slot, decided in this one statement, on the database
	// that holds the slot.
	NotCompletedError string
	// RetryUntil, with Status SlotFailed, keeps the slot open to a retry
	// (a claim with RetryFailed) until then, by the database clock: while
	// the slot stays failed, SlotListInterrupted lists it until this
	// passes, so that a live replica retries it when the one whose attempt
	// failed is gone. Zero (the slot's last attempt, or no retry before
	// the job's next slot) lists it never. Only with Status SlotFailed.
	RetryUntil time.Time
	Now        time.Time // pins the clock for this call; zero means the database clock
}

// SlotAbandonParams are the arguments of Store.SlotAbandon: the dead claim,
// as SlotListInterrupted returned it, and what its run row says.
type SlotAbandonParams struct {
	Job         string
	Slot        time.Time
	LeaseName   string
	Owner       string // the dead claim's owner
	Generation  int64  // and generation
	MaxAttempts int    // the job's: the slot is abandoned only once its attempts reached it
	// Grace is how long the run must have been dead by its lease: its
	// generation's lease expired (or a later generation took the lease)
	// at least Grace ago. A live owner that lost its lease stops its
	// handler by the expiry and records the end soon after; that end is
	// waited for, and wins. Where the store knows the owner's process is
	// gone (PostgreSQL's liveness lock), there is nothing to wait for.
	Grace time.Duration
	Error string // the run row's error
	Logs  []string
	Now   time.Time // pins the clock for this call; zero means the database clock
}

// RunInterruptedParams are the arguments of Store.RunInterrupted, for one
// dead holding: the running slot as SlotListInterrupted listed it, and
// what its run row says. Items of one call name distinct holdings and
// share Now.
type RunInterruptedParams struct {
	Job        string
	Slot       time.Time
	LeaseName  string
	Owner      string // the dead run's owner
	Generation int64  // and its generation
	// Error is the run row's error, to which the store adds how it found
	// the run dead (InterruptedError).
	Error string
	Log   string    // the run row's log line, or none
	Now   time.Time // pins the clock for this call; zero means the database clock
}

// ReasonInterrupted is the Reason of the run row of an attempt whose run
// died without recording its end, written by the replica that found it
// dead (Store.RunInterrupted, Store.SlotAbandon): not a success, and not
// a skip.
const ReasonInterrupted = "interrupted"

// How a store found a run dead, as the error of its interrupted run row
// says it (InterruptedError).
const (
	// DeadLeaseExpired: its lease expired, not renewed; the row's end is
	// the expiry.
	DeadLeaseExpired = "its lease expired without being renewed"
	// DeadOwnerGone: its owner's process is gone (where the store can
	// tell: PostgreSQL's liveness lock, freed with the owner's session),
	// its lease not expired yet.
	DeadOwnerGone = "its owner's process was gone"
	// DeadLeaseTaken: a later holding has its lease (taken after it
	// expired, or once its owner was gone).
	DeadLeaseTaken = "a later holder had taken its lease"
)

// InterruptedError is the error of an interrupted run row: the caller's
// error and how the store found the run dead (DeadLeaseExpired, …).
func InterruptedError(err, how string) string {
	return err + " (" + how + ")"
}

// SlotFinishResult is what Store.SlotFinish returns.
type SlotFinishResult struct {
	SlotUpdated bool // false when the slot was no longer this owner's; Run then records the takeover, not success
	// SlotStatus is the slot's status after the finish, when SlotUpdated:
	// completed (asked for, or completed by this holding before), failed,
	// or running (left for a resume).
	SlotStatus    SlotStatus
	LeaseReleased bool // false when the lease was no longer this owner's
	Run           Run  // the row written
	// Buffered is the job's earliest buffered slot (overlap policy
	// buffer-one), waiting for this run to end; zero when none.
	Buffered time.Time
}

// JobState is the shared, persistent state of one job: the pause override.
type JobState struct {
	Job string
	// EnabledOverride overrides the job's declared enabled value; nil
	// follows the declaration.
	EnabledOverride *bool
	OverrideBy      string    // who set or cleared the override
	OverrideAt      time.Time // when, by the database clock
	Note            string
	// Until, when not zero, ends the override: it decides the slots
	// before Until, and the declared value those from Until on, on every
	// replica and with no write (a pause until a time). Zero: until it is
	// changed.
	Until time.Time
}

// Override is the override that decides a slot at t: EnabledOverride, or
// nil when there is none or it ended (Until at or before t).
func (js JobState) Override(t time.Time) *bool {
	if js.EnabledOverride == nil || !js.Until.IsZero() && !t.Before(js.Until) {
		return nil
	}
	return js.EnabledOverride
}

// JobStateSetParams are the arguments of Store.JobStateSet.
type JobStateSetParams struct {
	Job     string
	Enabled *bool // nil removes the override
	By      string
	Note    string
	// Until, with Enabled set, ends the override at that instant (see
	// JobState.Until); zero keeps it until it is changed.
	Until time.Time
}

// Liveness is implemented by stores that can tell whether a lease's owner
// process is still alive (PostgreSQL: a session-level advisory lock the
// process holds on a dedicated connection). A contender may then take over
// a dead owner's leases at once instead of waiting for their TTL. Fencing
// still guards every write, so a live owner wrongly judged dead (its
// liveness connection broke) loses its lease safely.
type Liveness interface {
	// LivenessHold takes a liveness lock for owner and holds it until
	// release is called or the process dies. The key goes into
	// SlotClaimParams.LiveKey.
	LivenessHold(ctx context.Context, owner string) (key int64, release func(), err error)
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
	// LeaseName is the lease the run held at Generation; empty for a skip
	// and a run made without a lease. Written by SlotFinish (from its
	// params) and RunInsert; a holding has at most one run row.
	LeaseName string
	Attempt   int
	StartedAt time.Time
	// FinishedAt is when the run ended: the scheduler's runs give the
	// instant their handler returned (by the database clock as the
	// replica reads it, never before StartedAt), not when the end reached
	// the store; zero means the store's clock as it writes the row.
	FinishedAt time.Time
	Success    bool
	Skipped    bool
	Reason     string // why a run was skipped, e.g. "already_executing"; ReasonInterrupted for an attempt found dead
	Error      string
	Logs       []string // bounded by MaxRunLogLines and MaxRunLogBytes
}

// RunListParams are the arguments of Store.RunList.
type RunListParams struct {
	Job   string // empty for all jobs
	Limit int    // at most MaxRunListLimit; 0 means DefaultRunListLimit
	// Before pages on: only the rows that come after it in RunList's
	// order (started earlier, or at the same instant with a smaller id).
	// The previous page's last row's Cursor(); zero for the newest.
	Before RunCursor
}

// RunCursor is a place in RunList's order: a row's start and id.
type RunCursor struct {
	StartedAt time.Time
	ID        int64
}

// IsZero reports whether c is the zero cursor: the start of the list.
func (c RunCursor) IsZero() bool { return c.StartedAt.IsZero() && c.ID == 0 }

// Cursor is r's place in RunList's order, to page on after it.
func (r Run) Cursor() RunCursor { return RunCursor{StartedAt: r.StartedAt, ID: r.ID} }

// RunListPerJobParams are the arguments of Store.RunListPerJob.
type RunListPerJobParams struct {
	Jobs  []string // distinct names, at most MaxRunListJobs
	Limit int      // per job, 1 to MaxRunListLimit
}

// DefaultPruneBatch is how many slots, and how many runs, one step of
// Store.Prune deletes at most when PruneParams.Batch is 0: a fraction of a
// second's work on PostgreSQL, large enough that a step's fixed costs do
// not count.
const DefaultPruneBatch = 10_000

// MaxPruneBatch bounds PruneParams.Batch: a step holds its rows' locks (on
// SQLite, the database's only writer) until it commits.
const MaxPruneBatch = 100_000

// PruneParams are the arguments of Store.Prune.
type PruneParams struct {
	Before time.Time // rows older than this go, except each job's latest

	// Batch is the most slots, and the most runs, one step deletes: 1 to
	// MaxPruneBatch; 0 means DefaultPruneBatch.
	Batch int

	// AfterStep, when set, is called after each step has committed, with
	// the totals so far. An error from it ends the prune there: Prune
	// returns it (wrapped) beside those totals. The scheduler renews its
	// retention lease here, and stops when the lease is lost.
	AfterStep func(PruneResult) error
}

// BatchOrDefault is p.Batch, or DefaultPruneBatch when it is 0.
func (p PruneParams) BatchOrDefault() int {
	if p.Batch == 0 {
		return DefaultPruneBatch
	}
	return p.Batch
}

// PruneResult counts what Store.Prune deleted.
type PruneResult struct {
	Slots int64
	Runs  int64
}
