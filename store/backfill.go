package store

import (
	"context"
	"time"
)

// Backfills are the backfills of jobs: requests to run the slots of a
// range that never ran, kept in the database so that any replica can drive
// one and another take over where it stopped. A backfill's runs are slot
// claims like any other (the slot's row keeps each slot to one run); the
// backfill row holds the request and its progress.
type Backfills interface {
	// BackfillCreate writes a new backfill, running, with a new ID and
	// no progress. A running backfill of the same job is a *ConflictError
	// naming it (Name: the job, Current: its ID): one backfill of a job
	// runs at a time, so two started at once never both run.
	BackfillCreate(ctx context.Context, p BackfillCreateParams) (Backfill, error)

	// BackfillGet returns the backfill id, or ErrNotFound.
	BackfillGet(ctx context.Context, id int64) (Backfill, error)

	// BackfillList returns backfills newest first (highest ID first),
	// those of p.Job only when it is set, only the running ones with
	// p.Running, before ID p.Before when it is not zero, at most p.Limit.
	BackfillList(ctx context.Context, p BackfillListParams) ([]Backfill, error)

	// BackfillProgress records the progress of a running backfill: its
	// cursor, counts, driver and, with Done, its end (state done,
	// FinishedAt the database clock). It writes only while the backfill is
	// running and p.Cursor is not before the cursor recorded (a driver
	// deposed and late never moves the cursor back), and returns the
	// backfill as it is after the call, with whether it wrote. A backfill
	// that does not exist is ErrNotFound.
	BackfillProgress(ctx context.Context, p BackfillProgressParams) (Backfill, bool, error)

	// BackfillCancel ends a running backfill, state cancelled, naming who
	// and when (the database clock), and returns it with true; one that
	// already ended is returned as it is, with false. A backfill that does
	// not exist is ErrNotFound.
	BackfillCancel(ctx context.Context, id int64, by string) (Backfill, bool, error)

	// SlotList returns the slot rows of p.Job with a slot in [p.From,
	// p.To), oldest first, at most p.Limit: a page. Slots are whole
	// seconds, so the next page starts a second after the last slot.
	SlotList(ctx context.Context, p SlotListParams) ([]Slot, error)
}

// BackfillState is where a backfill stands.
type BackfillState string

const (
	// BackfillRunning: a replica drives it, or will take it up.
	BackfillRunning BackfillState = "running"
	// BackfillDone: every slot of its range was handled.
	BackfillDone BackfillState = "done"
	// BackfillCancelled: cancelled before it was done.
	BackfillCancelled BackfillState = "cancelled"
)

// MaxBackfillSlots bounds the slots of one backfill's range, whatever
// Config.MaxBackfillSlots says.
const MaxBackfillSlots = 1_000_000

// Backfill is one backfill as the store holds it.
type Backfill struct {
	ID  int64
	Job string
	// From and To are its range: the job's slots at or after From and
	// before To.
	From, To time.Time
	// IncludeFailed runs the failed slots of the range again too.
	IncludeFailed bool
	// Rate is at most how many slots it starts a second; 0 for no bound
	// but the one run at a time.
	Rate int
	// Total is how many slots the range holds.
	Total int
	State BackfillState
	// Cursor is the last slot handled; zero before the first. The driver
	// goes on after it.
	Cursor time.Time
	// Counts are the slots handled, by what happened to them.
	Counts BackfillCounts
	// Driver is the owner of the replica that last recorded progress.
	Driver    string
	CreatedBy string
	CreatedAt time.Time
	UpdatedAt time.Time // of the last write
	// FinishedAt is when it was done or cancelled; zero while running.
	FinishedAt time.Time
	// CancelledBy names who cancelled it; empty otherwise.
	CancelledBy string
}

// BackfillCounts are a backfill's slots by what happened to them. Their
// sum is the slots handled, Total once done.
type BackfillCounts struct {
	Ran       int `json:"ran"`       // run by the backfill, and completed
	Failed    int `json:"failed"`    // run by the backfill, and failed
	Completed int `json:"completed"` // completed before: never run again
	// FailedBefore: failed before, left so (without IncludeFailed).
	FailedBefore int `json:"failedBefore"`
	Skipped      int `json:"skipped"`  // settled skipped before (an overlap, a pause, an exclusion, a stall): final
	Running      int `json:"running"`  // running when reached: another run has it
	Paused       int `json:"paused"`   // the job was paused when the slot was reached: left untouched
	Excluded     int `json:"excluded"` // inside an exclusion window: left untouched
	Taken        int `json:"taken"`    // claimed meanwhile by another replica (a scheduled run, a catch-up)
}

// Handled is the sum of the counts.
func (c BackfillCounts) Handled() int {
	return c.Ran + c.Failed + c.Completed + c.FailedBefore + c.Skipped + c.Running + c.Paused + c.Excluded + c.Taken
}

// BackfillCreateParams are the arguments of BackfillCreate.
type BackfillCreateParams struct {
	Job           string // a job name (ValidateName)
	From, To      time.Time
	IncludeFailed bool
	Rate          int // 0 for none; at most MaxBackfillRate
	Total         int // the slots of the range: 0 to MaxBackfillSlots
	By            string
}

// MaxBackfillRate bounds a backfill's rate, in slots a second.
const MaxBackfillRate = 10_000

// BackfillListParams are the arguments of BackfillList.
type BackfillListParams struct {
	Job     string // empty for every job's
	Running bool   // only the running ones
	Before  int64  // only IDs below it; 0 for the newest
	Limit   int    // at most MaxBackfillListLimit; 0 means DefaultBackfillListLimit
}

const (
	// DefaultBackfillListLimit is BackfillList's page when Limit is 0.
	DefaultBackfillListLimit = 100
	// MaxBackfillListLimit bounds BackfillList's page.
	MaxBackfillListLimit = 1000
)

// BackfillProgressParams are the arguments of BackfillProgress.
type BackfillProgressParams struct {
	ID     int64
	Cursor time.Time // the last slot handled
	Counts BackfillCounts
	Driver string // the replica recording it
	Done   bool   // every slot is handled: the backfill ends, done
}

// SlotListParams are the arguments of SlotList.
type SlotListParams struct {
	Job      string
	From, To time.Time // the range: From <= slot < To
	Limit    int       // at most MaxSlotListLimit; 0 means MaxSlotListLimit
}

// MaxSlotListLimit bounds SlotList's page.
const MaxSlotListLimit = 1000
