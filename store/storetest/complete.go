package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// completeParams is the completion of r's slot under r's holding.
func completeParams(r store.SlotClaimResult) store.SlotCompleteParams {
	return store.SlotCompleteParams{Job: r.Slot.Job, Slot: r.Slot.Slot, LeaseName: r.Lease.Name, Generation: r.Lease.Generation}
}

// completeIn returns a WriteTx guard that completes p inside the caller's
// transaction.
func completeIn(t *testing.T, b Bundle, p store.SlotCompleteParams) func(tx any) error {
	return func(tx any) error { return b.Store.SlotComplete(ctx(t), tx, p) }
}

// takeOver makes another owner the lease's holder, as after the first
// owner's expiry: the acquisition is pinned past it.
func takeOver(t *testing.T, s store.Store, name string, now time.Time) store.Lease {
	t.Helper()
	return mustAcquire(t, s, store.LeaseAcquireParams{Name: name, Owner: "b", TTL: time.Hour, Now: now.Add(time.Hour)})
}

var completeTests = []namedTest{
	{name: "CommitsWithTheEffect", fn: func(t *testing.T, b Bundle) {
		// The handler completes its slot in the transaction of its effect:
		// both commit, and the slot is never claimed or resumed again, even
		// once its lease is gone and no finish was ever recorded (the
		// replica stopped right after the commit).
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Second)
		r := mustClaim(t, b.Store, claimParams(slot, "a", now))
		if err := b.WriteTx(ctx(t), "effect", true, completeIn(t, b, completeParams(r))); err != nil {
			t.Fatalf("complete in the effect's transaction: %v", err)
		}
		if !b.Written(ctx(t), "effect") {
			t.Fatal("the effect did not commit")
		}
		got := mustGetSlotOf(t, b.Store, "report", slot)
		if got.Status != store.SlotCompleted || got.Generation != r.Lease.Generation || got.FinishedAt.IsZero() || got.Attempts != 1 {
			t.Fatalf("slot after the completion = %+v; want completed by generation %d, finished", got, r.Lease.Generation)
		}
		if l, err := b.Store.LeaseGet(ctx(t), r.Lease.Name); err != nil || !l.ExpiresAt.Equal(r.Lease.ExpiresAt) {
			t.Fatalf("lease after the completion = %+v, %v; want it still held (the finish releases it)", l, err)
		}
		takeOver(t, b.Store, r.Lease.Name, now)
		if dead, err := b.Store.SlotListInterrupted(ctx(t)); err != nil || len(dead) != 0 {
			t.Fatalf("interrupted after a completion whose run never finished = %+v, %v; want none", dead, err)
		}
		wantRefusal(t, b.Open(t), claimParams(slot, "c", now.Add(2*time.Hour)), store.ClaimCompleted)
	}},
	{name: "RolledBackLeavesTheSlotRunning", fn: func(t *testing.T, b Bundle) {
		// A later statement of the handler's transaction failed: neither
		// the effect nor the completion landed, and the slot is resumed
		// once its run is gone.
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Second)
		r := mustClaim(t, b.Store, claimParams(slot, "a", now))
		if err := b.WriteTx(ctx(t), "effect", false, completeIn(t, b, completeParams(r))); err != nil {
			t.Fatal(err)
		}
		if b.Written(ctx(t), "effect") {
			t.Fatal("a rolled back effect is there")
		}
		if got := mustGetSlotOf(t, b.Store, "report", slot); got.Status != store.SlotRunning {
			t.Fatalf("slot after a rolled back completion = %+v; want running", got)
		}
		takeOver(t, b.Store, r.Lease.Name, now)
		if dead, err := b.Store.SlotListInterrupted(ctx(t)); err != nil || len(dead) != 1 || !dead[0].Slot.Equal(slot) {
			t.Fatalf("interrupted = %+v, %v; want the slot whose completion rolled back", dead, err)
		}
	}},
	{name: "FencedOutWritesNothing", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Second)
		r := mustClaim(t, b.Store, claimParams(slot, "a", now))
		takeOver(t, b.Store, r.Lease.Name, now)
		before := b.Dump(t)
		err := b.WriteTx(ctx(t), "effect", true, completeIn(t, b, completeParams(r)))
		wantErrIs(t, "completion by a deposed generation", err, store.ErrLeaseLost)
		if b.Written(ctx(t), "effect") {
			t.Fatal("a deposed generation's effect committed")
		}
		if after := b.Dump(t); after != before {
			t.Fatalf("a refused completion wrote:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	}},
	{name: "FinishKeepsTheCompletion", fn: func(t *testing.T, b Bundle) {
		// The handler failed after its transaction committed: the slot
		// stays completed (its effect is there) and the run row records
		// the failure.
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Second)
		r := mustClaim(t, b.Store, claimParams(slot, "a", now))
		if err := b.WriteTx(ctx(t), "effect", true, completeIn(t, b, completeParams(r))); err != nil {
			t.Fatal(err)
		}
		completedAt := mustGetSlotOf(t, b.Store, "report", slot).FinishedAt
		p := finishParams(r, store.SlotFailed, now.Add(time.Second))
		p.Run.Error = "failed after the commit"
		res := mustFinish(t, b.Store, p)
		if !res.SlotUpdated || !res.LeaseReleased || res.Run.Success || res.Run.Error != "failed after the commit" {
			t.Fatalf("finish after the completion = %+v; want the slot counted, the lease released, the failure recorded", res)
		}
		got := mustGetSlotOf(t, b.Store, "report", slot)
		if got.Status != store.SlotCompleted || !got.FinishedAt.Equal(completedAt) {
			t.Fatalf("slot after the finish = %+v; want still completed at %s", got, completedAt)
		}
	}},
	{name: "ManualRunOnlyFences", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		manual := mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: "job:report", Owner: "a", TTL: ttl})
		p := store.SlotCompleteParams{Job: "report", LeaseName: manual.Name, Generation: manual.Generation}
		if err := b.WriteTx(ctx(t), "manual", true, completeIn(t, b, p)); err != nil {
			t.Fatalf("completion of a manual run: %v", err)
		}
		if !b.Written(ctx(t), "manual") {
			t.Fatal("the manual run's effect did not commit")
		}
		takeOver(t, b.Store, manual.Name, now)
		err := b.WriteTx(ctx(t), "manual-late", true, completeIn(t, b, p))
		wantErrIs(t, "a deposed manual run's completion", err, store.ErrLeaseLost)
	}},
	{name: "BadInput", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		r := mustClaim(t, b.Store, claimParams(now.Add(-time.Second), "a", now))
		for name, p := range map[string]store.SlotCompleteParams{
			"no job":        {Slot: now, LeaseName: "job:report", Generation: 1},
			"no lease":      {Job: "report", Slot: now, Generation: 1},
			"no generation": {Job: "report", Slot: now, LeaseName: "job:report"},
		} {
			err := b.WriteTx(ctx(t), "bad", true, completeIn(t, b, p))
			wantErrIs(t, name, err, store.ErrInvalidArgument)
		}
		for name, tx := range map[string]any{"nil": nil, "a string": "BEGIN", "the store": b.Store} {
			wantErrIs(t, "completion in "+name, b.Store.SlotComplete(ctx(t), tx, completeParams(r)), store.ErrUnsupportedTx)
		}
		if got := mustGetSlotOf(t, b.Store, "report", r.Slot.Slot); got.Status != store.SlotRunning {
			t.Fatalf("bad completions changed the slot: %+v", got)
		}
	}},
	{name: "FinishRetriedWritesOneRunRow", fn: func(t *testing.T, b Bundle) {
		// A finish whose first attempt committed but whose answer was lost
		// (the connection broke) is tried again: the second attempt writes
		// no second run row and reports the first, for a slot and for a
		// manual run alike.
		now := dbNow(t, b.Store)
		r := mustClaim(t, b.Store, claimParams(now.Add(-time.Second), "a", now))
		p := finishParams(r, store.SlotCompleted, now.Add(time.Second))
		first := mustFinish(t, b.Store, p)
		again := mustFinish(t, b.Open(t), p)
		if !again.SlotUpdated || again.Run.ID != first.Run.ID || !again.Run.Success {
			t.Fatalf("retried finish = %+v; want the slot counted and the first row %d", again, first.Run.ID)
		}
		manual := mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: "job:report", Owner: "a", TTL: ttl, Now: now.Add(2 * time.Second)})
		mp := store.SlotFinishParams{Job: "report", LeaseName: manual.Name, Owner: "a", Generation: manual.Generation,
			Status: store.SlotCompleted, Now: now.Add(3 * time.Second), Run: store.Run{Manual: true, Attempt: 1, Success: true}}
		firstManual := mustFinish(t, b.Store, mp)
		if againManual := mustFinish(t, b.Store, mp); againManual.Run.ID != firstManual.Run.ID {
			t.Fatalf("retried manual finish wrote row %d beside %d", againManual.Run.ID, firstManual.Run.ID)
		}
		runs, err := b.Store.RunList(ctx(t), store.RunListParams{Job: "report"})
		if err != nil || len(runs) != 2 {
			t.Fatalf("run rows = %+v, %v; want one per holding, 2", runs, err)
		}
		if runs[0].LeaseName != "job:report" || runs[0].Generation != manual.Generation || runs[1].Generation != r.Lease.Generation {
			t.Fatalf("run rows = %+v; want each naming its holding", runs)
		}
	}},
}

var registerTests = []namedTest{
	{name: "FirstSeenOnce", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		regs := mustRegister(t, b.Store, now, "a", "b")
		for i, job := range []string{"a", "b"} {
			if regs[i].Job != job || !regs[i].FirstSeen.Equal(now) {
				t.Fatalf("first registration %d = %+v; want %s first seen at %s", i, regs[i], job, now)
			}
		}
		// A later registration, from another replica, keeps the first.
		later := mustRegister(t, b.Open(t), now.Add(time.Hour), "b", "c")
		if !later[0].FirstSeen.Equal(now) || later[0].Job != "b" {
			t.Fatalf("b registered again = %+v; want first seen at %s", later[0], now)
		}
		if !later[1].FirstSeen.Equal(now.Add(time.Hour)) || later[1].Job != "c" {
			t.Fatalf("c = %+v; want first seen at %s", later[1], now.Add(time.Hour))
		}
	}},
	{name: "AJobWithHistoryIsNotNew", fn: func(t *testing.T, b Bundle) {
		// A database migrated from before registrations existed: a job
		// that already has slots was first seen at its earliest.
		now := dbNow(t, b.Store)
		old := now.Add(-48 * time.Hour)
		r := mustClaim(t, b.Store, claimParams(old, "a", old.Add(time.Second)))
		mustFinish(t, b.Store, finishParams(r, store.SlotCompleted, old.Add(2*time.Second)))
		mustClaim(t, b.Store, claimParams(old.Add(time.Hour), "a", old.Add(time.Hour)))
		if regs := mustRegister(t, b.Store, now, "report"); !regs[0].FirstSeen.Equal(old) {
			t.Fatalf("registration of a job with history = %+v; want first seen at its earliest slot %s", regs[0], old)
		}
	}},
	{name: "ConcurrentReplicasAgree", serial: true, fn: func(t *testing.T, b Bundle) {
		// Every replica starts at once with the same new jobs: they all get
		// one first registration per job.
		now := dbNow(t, b.Store)
		stores := make([]store.Store, contenders)
		for i := range stores {
			stores[i] = b.Open(t)
		}
		got := make([][]store.JobRegistration, contenders)
		errs := make([]error, contenders)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range stores {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				got[i], errs[i] = stores[i].JobRegister(ctx(t), store.JobRegisterParams{
					Jobs: []string{"x", "y", "z"}, Now: now.Add(time.Duration(i) * time.Millisecond)})
			}()
		}
		close(start)
		wg.Wait()
		for i := range got {
			if errs[i] != nil {
				t.Fatalf("replica %d: %v", i, errs[i])
			}
			for j := range got[i] {
				if got[i][j] != got[0][j] {
					t.Fatalf("replica %d got %+v, replica 0 %+v", i, got[i][j], got[0][j])
				}
			}
		}
	}},
	{name: "BadInput", fn: func(t *testing.T, b Bundle) {
		for name, jobs := range map[string][]string{
			"a duplicate": {"a", "a"},
			"an empty":    {"a", ""},
			"a NUL":       {"a\x00b"},
		} {
			_, err := b.Store.JobRegister(ctx(t), store.JobRegisterParams{Jobs: jobs})
			wantErrIs(t, name, err, store.ErrInvalidArgument)
		}
		if regs, err := b.Store.JobRegister(ctx(t), store.JobRegisterParams{}); err != nil || len(regs) != 0 {
			t.Fatalf("empty registration = %+v, %v", regs, err)
		}
	}},
}

func mustRegister(t *testing.T, s store.Store, now time.Time, jobs ...string) []store.JobRegistration {
	t.Helper()
	regs, err := s.JobRegister(ctx(t), store.JobRegisterParams{Jobs: jobs, Now: now})
	if err != nil {
		t.Fatalf("JobRegister(%v): %v", jobs, err)
	}
	if len(regs) != len(jobs) {
		t.Fatalf("JobRegister(%v) = %+v; want one registration a job", jobs, regs)
	}
	return regs
}
