package adminview

import (
	"encoding/hex"

	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/internal/traceid"
	"github.com/cronfence/cronfence/store"
)

// RunOf is the API view of a run row.
func RunOf(r store.Run) client.Run {
	v := client.Run{
		ID: r.ID, JobID: r.Job, Slot: Time(r.Slot), Manual: r.Manual, CatchUp: r.CatchUp,
		Owner: r.Owner, Generation: r.Generation, Attempt: r.Attempt,
		StartedAt: Time(r.StartedAt), FinishedAt: Time(r.FinishedAt), Success: r.Success,
		Result: client.RunResult{Skipped: r.Skipped, Reason: r.Reason}, Logs: r.Logs,
	}
	if !r.Slot.IsZero() {
		id := traceid.Trace(r.Job, r.Slot)
		v.TraceID = hex.EncodeToString(id[:])
	}
	if r.Error != "" {
		e := r.Error
		v.Error = &e
	}
	if v.Logs == nil {
		v.Logs = []string{}
	}
	return v
}

// HolderOf is the API view of the lease row of a running job.
func HolderOf(l store.Lease) client.Holder {
	return client.Holder{Owner: l.Owner, Generation: l.Generation, AcquiredAt: Time(l.AcquiredAt), ExpiresAt: Time(l.ExpiresAt)}
}
