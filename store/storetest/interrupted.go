package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cronfence/cronfence/store"
)

// interruptedTests cover RunInterrupted: the run row of an attempt that
// died without recording its end, written once per holding by whichever
// replica found it dead.
var interruptedTests = []namedTest{
	{name: "RecordsEachDeadHoldingOnce", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		claim := func(s store.Store, job, owner string, at time.Time) store.SlotClaimResult {
			t.Helper()
			p := claimParams(at.Add(-time.Second), owner, at)
			p.Job, p.LeaseName = job, "job:"+job
			return mustClaim(t, s, p)
		}
		item := func(r store.SlotClaimResult) store.RunInterruptedParams {
			return store.RunInterruptedParams{Job: r.Slot.Job, Slot: r.Slot.Slot, LeaseName: r.Lease.Name, Owner: r.Lease.Owner,
				Generation: r.Lease.Generation, Error: "interrupted on attempt 1 of 3", Log: "found dead by b", Now: now}
		}
		runs := func(job string) []store.Run {
			t.Helper()
			rs, err := b.Store.RunList(ctx(t), store.RunListParams{Job: job})
			if err != nil {
				t.Fatal(err)
			}
			return rs
		}
		dead := claim(b.Store, "dead", "a", now.Add(-time.Hour)) // its lease expired long ago
		alive := claim(b.Store, "alive", "a", now)
		taken := claim(b.Store, "taken", "a", now.Add(-time.Hour))
		claim(b.Store, "taken", "b", now.Add(-time.Second)) // a later slot's claim took its lease
		done := claim(b.Store, "done", "a", now.Add(-time.Hour))
		mustFinish(t, b.Store, finishParams(done, store.SlotCompleted, now.Add(-time.Hour)))
		other := item(dead)
		other.Generation++ // not the holding the slot runs under

		got, err := b.Store.RunInterrupted(ctx(t), []store.RunInterruptedParams{item(alive), item(dead), item(done), item(taken), other})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("recorded %+v; want the dead run's and the taken-over run's rows only", got)
		}
		want := store.Run{
			ID: got[0].ID, Job: "dead", Slot: dead.Slot.Slot, Owner: "a", Generation: dead.Lease.Generation, LeaseName: "job:dead",
			Attempt: 1, StartedAt: dead.Slot.StartedAt, FinishedAt: dead.Lease.ExpiresAt, Reason: store.ReasonInterrupted,
			Error: "interrupted on attempt 1 of 3 (" + store.DeadLeaseExpired + ")", Logs: []string{"found dead by b"},
		}
		if diff := cmp.Diff(want, got[0]); diff != "" {
			t.Fatalf("the dead run's row (-want +got):\n%s", diff)
		}
		if r := got[1]; r.Job != "taken" || r.Generation != taken.Lease.Generation || r.Success || r.Reason != store.ReasonInterrupted ||
			r.Error != "interrupted on attempt 1 of 3 ("+store.DeadLeaseTaken+")" || !r.FinishedAt.Equal(now) {
			t.Fatalf("the taken-over run's row = %+v; want interrupted, found taken over, ended now", r)
		}
		for _, job := range []string{"alive", "done"} {
			if rs := runs(job); len(rs) != (map[string]int{"alive": 0, "done": 1})[job] {
				t.Errorf("%s's run rows = %+v; want no interrupted row", job, rs)
			}
		}

		// Replicas that found it dead at once write one row: each call
		// returns it, and the holding has no other.
		raced := claim(b.Store, "raced", "a", now.Add(-time.Hour))
		var wg sync.WaitGroup
		ids := make([]int64, 4)
		errs := make([]error, 4)
		for i := range ids {
			s := b.Open(t)
			wg.Go(func() {
				rs, err := s.RunInterrupted(ctx(t), []store.RunInterruptedParams{item(raced), item(dead)})
				errs[i] = err
				for _, r := range rs {
					if r.Job == "raced" {
						ids[i] = r.ID
					}
				}
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
		for _, job := range []string{"raced", "dead"} {
			if rs := runs(job); len(rs) != 1 || rs[0].Reason != store.ReasonInterrupted {
				t.Fatalf("%s's run rows after four replicas recorded it at once = %+v; want one", job, rs)
			}
		}
		for i, id := range ids {
			if id != 0 && id != runs("raced")[0].ID {
				t.Errorf("call %d returned row %d, not the holding's row", i, id)
			}
		}

		// Resumed (attempt 2), the slot is no longer the dead holding's:
		// nothing more is recorded for it. Attempt 2's end is a row of its
		// own. The dead holding's owner, alive after all (it lost its
		// lease), records its end late: its own account, with its lines,
		// replaces the row that stood in for it, keeping its place.
		again := claimParams(dead.Slot.Slot, "b", now)
		again.Job, again.LeaseName = "dead", "job:dead"
		resumed := mustClaim(t, b.Open(t), again)
		if resumed.Slot.Attempts != 2 {
			t.Fatalf("resumed as attempt %d, want 2", resumed.Slot.Attempts)
		}
		if rs, err := b.Store.RunInterrupted(ctx(t), []store.RunInterruptedParams{item(dead)}); err != nil || len(rs) != 0 {
			t.Fatalf("after the resume: %+v, %v; want nothing recorded", rs, err)
		}
		mustFinish(t, b.Store, finishParams(resumed, store.SlotCompleted, now.Add(time.Second)))
		lateDead := finishParams(dead, store.SlotRunning, now)
		lateDead.NotCompletedError = "interrupted by lease loss, left for a replica to resume"
		late := mustFinish(t, b.Store, lateDead)
		if late.SlotUpdated || late.Run.ID != want.ID || late.Run.Reason != "" || late.Run.Success ||
			late.Run.Error != lateDead.NotCompletedError || len(late.Run.Logs) != 1 || late.Run.Logs[0] != "done" {
			t.Fatalf("the dead owner's late finish = %+v; want the slot left as it is and its own row in place of the interrupted one", late)
		}
		rs := runs("dead")
		if len(rs) != 2 || !rs[0].Success || rs[0].Attempt != 2 || rs[1].ID != want.ID || rs[1].Error != lateDead.NotCompletedError {
			t.Fatalf("dead's run rows = %+v; want attempt 2's success, then attempt 1's own end", rs)
		}
		// As well in a batch of finishes; and a finish sent again keeps
		// the first row, its own.
		batch, err := b.Store.SlotFinishBatch(ctx(t), []store.SlotFinishParams{finishParams(raced, store.SlotFailed, now)})
		if err != nil || len(batch) != 1 || batch[0].Run.Reason != "" || batch[0].Run.Logs[0] != "done" {
			t.Fatalf("raced's late finish in a batch = %+v, %v; want its own row in place of the interrupted one", batch, err)
		}
		resent := finishParams(raced, store.SlotFailed, now)
		resent.Run.Logs = []string{"sent again"}
		if res := mustFinish(t, b.Store, resent); res.Run.ID != batch[0].Run.ID || res.Run.Logs[0] != "done" {
			t.Fatalf("a finish sent again = %+v; want the first finish's row", res)
		}
		if rs := runs("raced"); len(rs) != 1 {
			t.Fatalf("raced's run rows = %+v; want one", rs)
		}
	}},
	{name: "RefusesBadInput", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		ok := store.RunInterruptedParams{Job: "j", Slot: now, LeaseName: "job:j", Owner: "a", Generation: 1, Now: now}
		before := b.Dump(t)
		for name, items := range map[string][]store.RunInterruptedParams{
			"no slot":          {{Job: "j", LeaseName: "job:j", Owner: "a", Generation: 1}},
			"no owner":         {{Job: "j", Slot: now, LeaseName: "job:j", Generation: 1}},
			"no generation":    {{Job: "j", Slot: now, LeaseName: "job:j", Owner: "a"}},
			"a holding twice":  {ok, ok},
			"two clocks":       {ok, {Job: "j", Slot: now, LeaseName: "job:j", Owner: "a", Generation: 2}},
			"a bad job name":   {{Job: "", Slot: now, LeaseName: "job:j", Owner: "a", Generation: 1}},
			"a bad lease name": {{Job: "j", Slot: now, LeaseName: "", Owner: "a", Generation: 1}},
		} {
			if _, err := b.Store.RunInterrupted(ctx(t), items); !errors.Is(err, store.ErrInvalidArgument) {
				t.Errorf("RunInterrupted with %s: %v, want ErrInvalidArgument", name, err)
			}
		}
		if after := b.Dump(t); after != before {
			t.Fatalf("refused calls wrote:\n%s", cmp.Diff(before, after))
		}
	}},
}
