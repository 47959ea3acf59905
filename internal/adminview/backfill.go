package adminview

import (
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/store"
)

// BackfillOf is the API view of a backfill.
func BackfillOf(b store.Backfill) client.Backfill {
	c := b.Counts
	return client.Backfill{
		ID: b.ID, Job: b.Job, From: Time(b.From), To: Time(b.To), IncludeFailed: b.IncludeFailed, Rate: b.Rate,
		State: string(b.State), Total: b.Total, Handled: c.Handled(), Cursor: Time(b.Cursor),
		Counts: client.BackfillCounts{Ran: c.Ran, Failed: c.Failed, Completed: c.Completed, FailedBefore: c.FailedBefore,
			Skipped: c.Skipped, Running: c.Running, Paused: c.Paused, Excluded: c.Excluded, Taken: c.Taken},
		Driver: b.Driver, CreatedBy: b.CreatedBy, CreatedAt: Time(b.CreatedAt), UpdatedAt: Time(b.UpdatedAt),
		FinishedAt: Time(b.FinishedAt), CancelledBy: b.CancelledBy,
	}
}

// BackfillPlanOf is the API view of a backfill's plan.
func BackfillPlanOf(plan []cronfence.BackfillSlot) client.BackfillPlan {
	out := client.BackfillPlan{Slots: make([]client.BackfillSlot, len(plan))}
	for i, s := range plan {
		out.Slots[i] = client.BackfillSlot{Slot: s.Slot.UTC().Format(time.RFC3339), Outcome: s.Outcome}
	}
	return out
}
