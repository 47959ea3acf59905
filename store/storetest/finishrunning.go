package storetest

import (
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// finishRunningTests cover SlotFinish with Status SlotRunning and
// NotCompletedError: the end of a run whose slot counts as completed only
// if its own transaction completed it, decided in the finish's one
// statement on the database that holds the slot.
var finishRunningTests = []namedTest{
	{name: "LeavesANotCompletedSlotToResume", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Second)
		r := mustClaim(t, b.Store, claimParams(slot, "a", now))
		p := finishParams(r, store.SlotRunning, now)
		p.Run.Success, p.NotCompletedError = true, "not completed by its transaction" // the handler's word
		res := mustFinish(t, b.Store, p)
		if !res.SlotUpdated || res.SlotStatus != store.SlotRunning || !res.LeaseReleased {
			t.Fatalf("finish = %+v; want the slot left running, the lease released", res)
		}
		if res.Run.Success || res.Run.Error != p.NotCompletedError || res.Run.Attempt != 1 {
			t.Fatalf("run row = %+v; want no success, the not-completed error", res.Run)
		}
		if got := mustGetSlot(t, b.Store, slot); got.Status != store.SlotRunning || !got.FinishedAt.IsZero() {
			t.Fatalf("slot = %+v; want running, unfinished", got)
		}
		dead, err := b.Store.SlotListInterrupted(ctx(t))
		if err != nil || len(dead) != 1 || !dead[0].Slot.Equal(slot) {
			t.Fatalf("interrupted = %+v, %v; want the slot left running", dead, err)
		}
		again := mustClaim(t, b.Open(t), claimParams(slot, "b", now.Add(time.Second)))
		if again.Slot.Attempts != 2 {
			t.Fatalf("the resume = %+v; want attempt 2", again.Slot)
		}
	}},
	{name: "KeepsASlotItsTransactionCompleted", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Second)
		r := mustClaim(t, b.Store, claimParams(slot, "a", now))
		if err := b.WriteTx(ctx(t), "effect", true, completeIn(t, b, completeParams(r))); err != nil {
			t.Fatal(err)
		}
		p := finishParams(r, store.SlotRunning, now)
		p.Run.Success, p.NotCompletedError = true, "not completed by its transaction"
		res := mustFinish(t, b.Store, p)
		if !res.SlotUpdated || res.SlotStatus != store.SlotCompleted || !res.Run.Success || res.Run.Error != "" {
			t.Fatalf("finish after the completion = %+v; want completed, a success", res)
		}
		if dead, err := b.Store.SlotListInterrupted(ctx(t)); err != nil || len(dead) != 0 {
			t.Fatalf("interrupted = %+v, %v; want none", dead, err)
		}
	}},
	{name: "FailsANotCompletedSlotWithItsError", fn: func(t *testing.T, b Bundle) {
		// The last attempt: failed, not left running; the row says why.
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Second)
		r := mustClaim(t, b.Store, claimParams(slot, "a", now))
		p := finishParams(r, store.SlotFailed, now)
		p.Run.Success, p.NotCompletedError = true, "not completed by its transaction"
		res := mustFinish(t, b.Store, p)
		if res.SlotStatus != store.SlotFailed || res.Run.Success || res.Run.Error != p.NotCompletedError {
			t.Fatalf("finish = %+v; want failed, no success, the not-completed error", res)
		}
		// Without the error, a failure's row is the handler's, as ever.
		other := claimParams(slot, "a", now)
		other.Job, other.LeaseName = "billing", "job:billing"
		r2 := mustClaim(t, b.Store, other)
		p2 := finishParams(r2, store.SlotFailed, now)
		p2.Run.Error = "boom"
		if res := mustFinish(t, b.Store, p2); res.Run.Error != "boom" || res.SlotStatus != store.SlotFailed {
			t.Fatalf("a plain failure = %+v", res)
		}
	}},
	{name: "TakenOverMeanwhileIsTheResume", fn: func(t *testing.T, b Bundle) {
		// The run was left to resume, and the resume came first: the row
		// says it was left to resume, not that it lost a race.
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Second)
		r := mustClaim(t, b.Store, claimParams(slot, "a", now))
		if resumed := mustClaim(t, b.Open(t), claimParams(slot, "b", now.Add(time.Hour))); resumed.Slot.Attempts != 2 {
			t.Fatalf("the resume = %+v; want attempt 2", resumed.Slot)
		}
		p := finishParams(r, store.SlotRunning, now)
		p.Run.Error, p.NotCompletedError = "lease lost", "interrupted by lease loss, left for a replica to resume: lease lost"
		res := mustFinish(t, b.Store, p)
		if res.SlotUpdated || res.Run.Success || res.Run.Error != p.NotCompletedError {
			t.Fatalf("finish after the takeover = %+v; want not updated, the row naming the interruption", res)
		}
	}},
	{name: "RunningNeedsASlot", fn: func(t *testing.T, b Bundle) {
		_, err := b.Store.SlotFinish(ctx(t), store.SlotFinishParams{Job: "report", LeaseName: "job:report", Owner: "a", Generation: 1, Status: store.SlotRunning})
		wantErrIs(t, "a manual run left running", err, store.ErrInvalidArgument)
	}},
}
