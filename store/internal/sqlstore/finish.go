package sqlstore

import (
	"fmt"
	"time"

	"github.com/cronfence/cronfence/store"
)

// FinishArgs checks a finish and returns its run row, bounded, and its
// slot, normalized, as the store writes them.
func FinishArgs(p store.SlotFinishParams) (store.Run, time.Time, error) {
	if err := p.Validate(); err != nil {
		return store.Run{}, time.Time{}, err
	}
	slot := Normalize(p.Slot)
	run := p.Run
	run.Job, run.Slot, run.Owner, run.Generation, run.LeaseName = p.Job, slot, p.Owner, p.Generation, p.LeaseName
	if err := run.Validate(); err != nil {
		return store.Run{}, time.Time{}, err
	}
	return run.Bounded(), slot, nil
}

// FinishedRun is the run row that the finish p writes at at, from run (as
// FinishArgs returned it) and res, what the update of its slot found. A
// slot marked (res.SlotUpdated) keeps the handler's verdict, unless p
// leaves it not completed (p.NotCompleted), and gives the row its default
// start, started, that of the very claim ending. A slot not marked was
// taken over: the row records that, not the handler's verdict, which no
// longer counts for the slot; for a run left to resume, the resume that
// followed. A manual run (no slot) keeps its verdict. The row's default
// end is at, the slot's finish, whatever the start.
func FinishedRun(p store.SlotFinishParams, run store.Run, res store.SlotFinishResult, started, at time.Time) store.Run {
	switch {
	case run.Slot.IsZero():
	case res.SlotUpdated:
		if run.StartedAt.IsZero() {
			run.StartedAt = started
		}
		if p.NotCompleted(res.SlotStatus) {
			run.Success, run.Error = false, store.Run{Error: p.NotCompletedError}.Bounded().Error
		}
	default:
		run.Success, run.Error = false, store.TakenOverError(p.Generation, run.Error)
		if p.Status == store.SlotRunning && p.NotCompletedError != "" {
			run.Error = store.Run{Error: p.NotCompletedError}.Bounded().Error
		}
	}
	if run.FinishedAt.IsZero() {
		run.FinishedAt = at
	}
	return run
}

// FinishWhat names, for an error, the finish of job's slot, or of a manual
// run of job when slot is zero.
func FinishWhat(job string, slot time.Time) string {
	if slot.IsZero() {
		return fmt.Sprintf("finish manual run of job %q", job)
	}
	return fmt.Sprintf("finish slot %s of job %q", slot.Format(time.RFC3339Nano), job)
}
