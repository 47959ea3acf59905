package cronfence

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/cronfence/cronfence/internal/runlog"
	"github.com/cronfence/cronfence/store"
)

// Run is what a handler gets about the run it is doing.
type Run struct {
	Job        string
	Slot       time.Time // the intended occurrence (UTC); zero for a manual run
	Generation int64     // the fencing token of the run's lease
	// Lease is the name of the run's lease, as the SQL functions fence()
	// and complete() take it with Generation: "job:NAME" for a job, one per
	// slot for OverlapAllow; empty for a run made without a lease.
	Lease   string
	Attempt int    // 1 for the first attempt of a slot
	Origin  Origin // why it runs: its timer, catch-up, a resume, Trigger, …
	Owner   string // this replica
	// Args are a stored schedule's arguments, as JSON, for its kind's
	// handler to decode (RegisterKind); nil for a declared job.
	Args json.RawMessage

	// Logger logs to the scheduler's logger and into the run's row (the
	// newest lines, bounded), where operators see them with the run. The
	// row gets every level; the scheduler's logger filters by its own, so
	// a detail logged at DEBUG is kept with the run and out of the
	// process's log unless that logs debug.
	Logger *slog.Logger

	lease   *Lease
	logs    *runlog.Buffer
	observe func(Event) // the scheduler's; nil outside one
}

// Fence checks, inside the caller's transaction tx, that this run still
// holds its lease, and holds it against a takeover until tx ends. It returns
// an error wrapping ErrLeaseLost when the run was fenced out: roll back. See
// Lease.Fence.
func (r *Run) Fence(ctx context.Context, tx any) error {
	if r.lease == nil {
		return errInvalid("run of job " + r.Job + " holds no lease to fence with (the store was unreachable when it started)")
	}
	return r.refused(r.lease.Fence(ctx, tx))
}

// refused reports a fence or a completion that the lease refused to the
// scheduler's observer, and returns err.
func (r *Run) refused(err error) error {
	if errors.Is(err, ErrLeaseLost) && r.observe != nil {
		r.observe(FenceRefusedEvent{Job: r.Job, Lease: r.lease.Name, Generation: r.Generation})
	}
	return err
}

// Complete fences the caller's transaction tx, as Fence does, and marks
// the run's slot completed in it: the handler's effect and the slot's
// completion commit together or not at all. A slot so completed is never run
// again, even when this process stops right after the commit, before the
// scheduler records the run's end (otherwise a replica resumes the slot
// once the lease expires, and its effect commits a second time). The run's
// end is still recorded when the handler returns; an error it returns then
// is recorded on the run row, and the slot stays completed.
//
// Call it last in the transaction that writes the run's effect, with tx a
// pgx.Tx or a *sql.Tx on the store's database (SQLite: the store's file),
// and commit. It returns an error wrapping ErrLeaseLost when the run was
// fenced out: roll back. A manual run has no slot; Complete only fences it.
func (r *Run) Complete(ctx context.Context, tx any) error {
	if r.lease == nil {
		return errInvalid("run of job " + r.Job + " holds no lease to complete its slot with (the store was unreachable when it started)")
	}
	return r.refused(r.lease.store.SlotComplete(ctx, tx, store.SlotCompleteParams{
		Job: r.Job, Slot: r.Slot, LeaseName: r.lease.Name, Generation: r.Generation,
	}))
}

// IdempotencyKey derives a key for this run's effects from the job and the
// slot, never from the time the run started, so a retried or duplicated run
// of the same slot produces the same key: "daily-close/2026-09-25T00:05:00Z"
// and, with parts, "daily-close/2026-09-25T00:05:00Z/store-42". A manual run
// has no slot; its key names its generation instead.
func (r *Run) IdempotencyKey(parts ...string) string {
	var b strings.Builder
	b.WriteString(r.Job)
	b.WriteByte('/')
	if r.Slot.IsZero() {
		b.WriteString("manual-")
		b.WriteString(strconv.FormatInt(r.Generation, 10))
	} else {
		b.WriteString(r.Slot.UTC().Format(time.RFC3339Nano))
	}
	for _, p := range parts {
		b.WriteByte('/')
		b.WriteString(p)
	}
	return b.String()
}
