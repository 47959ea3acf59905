package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cronfence/cronfence/store"
)

// settleTests cover how a slot is settled when it cannot run as claimed: a
// slot that came due while its job was paused, and a run whose slot was
// taken over before it ended.
var settleTests = []namedTest{
	{name: "PausedSlotSettledSkipped", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Second)
		setEnabled(t, b.Store, false)
		r := wantRefusal(t, b.Store, claimParams(slot, "a", now), store.ClaimPaused)
		// Settled skipped, and the skip recorded as a run row with reason
		// paused, in the same statement, as an overlap's skip is: the
		// slot's history says why nothing ran.
		wantSkip := store.Run{ID: r.SkipRun.ID, Job: "report", Slot: slot, Owner: "a", StartedAt: now, FinishedAt: now,
			Success: true, Skipped: true, Reason: string(store.ClaimPaused), Logs: []string{store.PausedSkipLine(true)}}
		if r.Recorded != store.SlotSkipped || r.SkipRun.ID == 0 || r.Lease != (store.Lease{}) || !cmp.Equal(wantSkip, r.SkipRun) {
			t.Fatalf("paused refusal = %+v; want the slot recorded skipped, a skip row with reason paused (-want +got):\n%s, no lease",
				r, cmp.Diff(wantSkip, r.SkipRun))
		}
		want := store.Slot{Job: "report", Slot: slot, Status: store.SlotSkipped, Owner: "a", LeaseName: "job:report", StartedAt: now, FinishedAt: now}
		if got := mustGetSlot(t, b.Store, slot); !cmp.Equal(want, got) {
			t.Fatalf("paused slot row (-want +got):\n%s", cmp.Diff(want, got))
		}
		// Still paused, a late replica is refused as paused and changes nothing.
		if r := wantRefusal(t, b.Open(t), claimParams(slot, "b", now.Add(time.Second)), store.ClaimPaused); r.Recorded != "" || r.SkipRun.ID != 0 {
			t.Fatalf("a second paused claim = %+v; want nothing recorded", r)
		}
		if got := mustGetSlot(t, b.Store, slot); !cmp.Equal(want, got) {
			t.Fatalf("a second paused claim changed the row (-want +got):\n%s", cmp.Diff(want, got))
		}

		// Resumed: a replica whose clock runs behind, and catch-up, find the
		// slot settled; nothing runs it.
		setEnabled(t, b.Store, true)
		late := b.Open(t)
		wantRefusal(t, late, claimParams(slot, "b", now.Add(2*time.Second)), store.ClaimSkipped)
		catchUp := claimParams(slot, "c", now.Add(time.Minute))
		catchUp.CatchUp = true
		wantRefusal(t, late, catchUp, store.ClaimSkipped)
		wantNotFoundLease(t, b.Store, "job:report")
		wantRuns(t, b.Store, wantSkip)

		// The next slot, due after the resume, runs.
		next := mustClaim(t, late, claimParams(slot.Add(time.Second), "b", now.Add(3*time.Second)))
		if next.Slot.Attempts != 1 || next.Lease.Generation != 1 {
			t.Fatalf("the slot after the resume = %+v, want attempt 1 at generation 1", next.Slot)
		}
	}},
	{name: "PausedDeclaredDisabledSettles", fn: func(t *testing.T, b Bundle) {
		// The declared value pauses as the override does.
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Second)
		p := claimParams(slot, "a", now)
		p.DeclaredDisabled = true
		r := wantRefusal(t, b.Store, p, store.ClaimPaused)
		if got := mustGetSlot(t, b.Store, slot); got.Status != store.SlotSkipped || got.Attempts != 0 {
			t.Fatalf("slot of a job declared disabled = %+v, want skipped", got)
		}
		if r.Recorded != store.SlotSkipped || r.SkipRun.Reason != string(store.ClaimPaused) || !cmp.Equal(r.SkipRun.Logs, []string{store.PausedSkipLine(false)}) {
			t.Fatalf("refusal of a job declared disabled = %+v; want a skip row with reason paused saying it is declared disabled", r)
		}
		wantRuns(t, b.Store, r.SkipRun)
		p.DeclaredDisabled, p.Owner = false, "b" // redeployed enabled
		wantRefusal(t, b.Store, p, store.ClaimSkipped)
	}},
	{name: "PausedLeavesExistingRowsAndFutureSlots", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		running := mustClaim(t, b.Store, claimParams(now.Add(-time.Minute), "a", now))
		other := claimParams(now.Add(-time.Minute), "a", now)
		other.Job, other.LeaseName = "other", "job:other"
		failed := mustClaim(t, b.Store, other)
		mustFinish(t, b.Store, finishParams(failed, store.SlotFailed, now))
		beforeRunning, beforeFailed := mustGetSlot(t, b.Store, running.Slot.Slot), mustGetSlotOf(t, b.Store, "other", failed.Slot.Slot)

		setEnabled(t, b.Store, false)
		if _, err := b.Store.JobStateSet(ctx(t), store.JobStateSetParams{Job: "other", Enabled: ptr(false), By: "ana"}); err != nil {
			t.Fatal(err)
		}
		wantRefusal(t, b.Store, claimParams(running.Slot.Slot, "b", now.Add(time.Second)), store.ClaimPaused)
		other.Owner, other.Now = "b", now.Add(time.Second)
		wantRefusal(t, b.Store, other, store.ClaimPaused)
		if got := mustGetSlot(t, b.Store, running.Slot.Slot); !cmp.Equal(beforeRunning, got) {
			t.Fatalf("a paused claim overwrote a running slot (-before +after):\n%s", cmp.Diff(beforeRunning, got))
		}
		if got := mustGetSlotOf(t, b.Store, "other", failed.Slot.Slot); !cmp.Equal(beforeFailed, got) {
			t.Fatalf("a paused claim overwrote a failed slot (-before +after):\n%s", cmp.Diff(beforeFailed, got))
		}
		// A slot not yet due is not settled: the pause may be lifted first.
		future := now.Add(time.Minute)
		wantRefusal(t, b.Store, claimParams(future, "b", now), store.ClaimNotDue)
		if _, err := b.Store.SlotGet(ctx(t), "report", future); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a paused claim of a future slot wrote it: %v", err)
		}
		// After the resume the failed slot is retried as before.
		if _, err := b.Store.JobStateSet(ctx(t), store.JobStateSetParams{Job: "other", Enabled: nil, By: "ana"}); err != nil {
			t.Fatal(err)
		}
		other.Now, other.RetryFailed = now.Add(2*time.Second), true
		if r := mustClaim(t, b.Store, other); r.Slot.Attempts != 2 {
			t.Fatalf("failed slot retried after the resume as attempt %d, want 2", r.Slot.Attempts)
		}
	}},
	{name: "PausedInBatch", fn: func(t *testing.T, b Bundle) {
		// A paused item is settled beside items that claim or overlap, in
		// one statement.
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Second)
		holder := mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: "job:busy", Owner: "z", TTL: ttl, Now: slot})
		item := func(job string) store.SlotClaimParams {
			p := claimParams(slot, "a", now)
			p.Job, p.LeaseName = job, "job:"+job
			return p
		}
		if _, err := b.Store.JobStateSet(ctx(t), store.JobStateSetParams{Job: "paused", Enabled: ptr(false), By: "ana"}); err != nil {
			t.Fatal(err)
		}
		results, err := b.Store.SlotClaimBatch(ctx(t), []store.SlotClaimParams{item("free"), item("paused"), item("busy")})
		if err != nil {
			t.Fatal(err)
		}
		if !results[0].Claimed || results[1].Refusal != store.ClaimPaused || results[2].Refusal != store.ClaimHeld ||
			results[2].Recorded != store.SlotSkipped || results[2].Lease.Generation != holder.Generation {
			t.Fatalf("batch results = %+v", results)
		}
		if paused, busy := results[1].SkipRun, results[2].SkipRun; results[1].Recorded != store.SlotSkipped || paused.Job != "paused" ||
			paused.Reason != string(store.ClaimPaused) || busy.Job != "busy" || busy.Reason != string(store.ClaimHeld) || paused.ID == busy.ID {
			t.Fatalf("batch skip rows: paused %+v, busy %+v; want one each, with its reason", paused, busy)
		}
		if got := mustGetSlotOf(t, b.Store, "paused", slot); got.Status != store.SlotSkipped || got.Generation != 0 {
			t.Fatalf("paused item's slot = %+v, want skipped", got)
		}
		wantNotFoundLease(t, b.Store, "job:paused")
	}},
	{name: "PausedSlotSettledOnceUnderRace", serial: true, fn: racePausedSettle},
	{name: "ResumeDuringClaimRace", serial: true, fn: raceResume},
	{name: "FinishAfterTakeoverIsNotSuccess", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Second)
		a := mustClaim(t, b.Store, claimParams(slot, "a", now))
		// a is deposed: its lease expired and b took the slot over.
		other := b.Open(t)
		bb := mustClaim(t, other, claimParams(slot, "b", now.Add(ttl)))
		if bb.Lease.Generation != a.Lease.Generation+1 {
			t.Fatalf("takeover at generation %d, want %d", bb.Lease.Generation, a.Lease.Generation+1)
		}
		res := mustFinish(t, b.Store, finishParams(a, store.SlotCompleted, now.Add(ttl+time.Second)))
		wantErr := fmt.Sprintf("the slot was taken over (generation %d no longer held it) before this run ended; its result was not recorded on the slot", a.Lease.Generation)
		if res.SlotUpdated || res.LeaseReleased || res.Run.Success || res.Run.Error != wantErr {
			t.Fatalf("deposed finish = updated %v, released %v, run success %v error %q; want neither updated nor released, success false, error %q",
				res.SlotUpdated, res.LeaseReleased, res.Run.Success, res.Run.Error, wantErr)
		}
		if res.Run.Generation != a.Lease.Generation || res.Run.Owner != "a" || res.Run.Attempt != 1 {
			t.Fatalf("deposed run row = %+v, want a's attempt 1 at generation %d", res.Run, a.Lease.Generation)
		}
		listed := wantRunByID(t, b.Store, res.Run.ID)
		if diff := cmp.Diff(res.Run, listed); diff != "" {
			t.Fatalf("listed run differs from the returned one (-returned +listed):\n%s", diff)
		}

		res = mustFinish(t, other, finishParams(bb, store.SlotCompleted, now.Add(ttl+2*time.Second)))
		if !res.SlotUpdated || !res.LeaseReleased || !res.Run.Success || res.Run.Error != "" || res.Run.Generation != bb.Lease.Generation {
			t.Fatalf("the new holder's finish = %+v; want slot updated, lease released, a successful run", res)
		}
		if got := mustGetSlot(t, b.Store, slot); got.Status != store.SlotCompleted || got.Generation != bb.Lease.Generation {
			t.Fatalf("slot after both finishes = %+v, want completed by generation %d", got, bb.Lease.Generation)
		}
	}},
	{name: "FinishAfterTakeoverKeepsRunError", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Second)
		a := mustClaim(t, b.Store, claimParams(slot, "a", now))
		mustClaim(t, b.Open(t), claimParams(slot, "b", now.Add(ttl)))
		p := finishParams(a, store.SlotFailed, now.Add(ttl+time.Second))
		p.Run.Error = "exit status 3"
		res := mustFinish(t, b.Store, p)
		want := fmt.Sprintf("the slot was taken over (generation %d no longer held it) before this run ended; its result was not recorded on the slot: exit status 3", a.Lease.Generation)
		if res.SlotUpdated || res.Run.Success || res.Run.Error != want {
			t.Fatalf("deposed failed finish = updated %v, success %v, error %q; want error %q", res.SlotUpdated, res.Run.Success, res.Run.Error, want)
		}
		// An error at the length limit stays within it with the prefix.
		a2 := claimParams(slot.Add(-time.Minute), "a", now)
		a2.Job, a2.LeaseName = "long", "job:long"
		c := mustClaim(t, b.Store, a2)
		a2.Owner, a2.Now = "b", now.Add(ttl)
		mustClaim(t, b.Open(t), a2)
		p = finishParams(c, store.SlotFailed, now.Add(ttl+time.Second))
		p.Run.Error = strings.Repeat("x", store.MaxRunErrorBytes)
		res = mustFinish(t, b.Store, p)
		if res.Run.Success || len(res.Run.Error) > store.MaxRunErrorBytes || !strings.HasPrefix(res.Run.Error, "the slot was taken over (generation ") {
			t.Fatalf("deposed finish with a long error: success %v, error of %d bytes starting %.40q", res.Run.Success, len(res.Run.Error), res.Run.Error)
		}
	}},
	{name: "ManualFinishNotMarkedTakenOver", fn: func(t *testing.T, b Bundle) {
		// A manual run has no slot to lose: its row keeps its verdict even
		// when its lease was taken over.
		now := dbNow(t, b.Store)
		manual := mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: "job:report", Owner: "a", TTL: ttl, Now: now})
		mustAcquire(t, b.Open(t), store.LeaseAcquireParams{Name: "job:report", Owner: "b", TTL: ttl, Now: now.Add(ttl)})
		res := mustFinish(t, b.Store, store.SlotFinishParams{
			Job: "report", LeaseName: manual.Name, Owner: manual.Owner, Generation: manual.Generation,
			Status: store.SlotCompleted, Now: now.Add(ttl + time.Second), Run: store.Run{Manual: true, Success: true},
		})
		if res.SlotUpdated || res.LeaseReleased || !res.Run.Success || res.Run.Error != "" {
			t.Fatalf("manual finish after a takeover = %+v; want its success kept", res)
		}
	}},
}

// racePausedSettle has every contender claim the same due slots of a paused
// job at once: each claim is refused as paused, none fails on the
// concurrent inserts, and each slot ends with one skipped row and no run.
func racePausedSettle(t *testing.T, b Bundle) {
	stores := openContenders(t, b)
	base := dbNow(t, b.Store)
	setEnabled(t, b.Store, false)
	const slots = 10
	for n := 0; n < slots; n++ {
		slot := base.Add(time.Duration(n) * time.Second)
		type result struct {
			r   store.SlotClaimResult
			err error
		}
		for i, res := range race(stores, func(i int, s store.Store) result {
			r, err := s.SlotClaim(ctx(t), claimParams(slot, fmt.Sprintf("replica-%02d", i), slot))
			return result{r, err}
		}) {
			if res.err != nil || res.r.Claimed || res.r.Refusal != store.ClaimPaused {
				t.Fatalf("slot %d, contender %d: claimed %v, refusal %q, err %v; want refused as paused", n, i, res.r.Claimed, res.r.Refusal, res.err)
			}
		}
		if got := mustGetSlot(t, b.Store, slot); got.Status != store.SlotSkipped || got.Attempts != 0 || got.Generation != 0 {
			t.Fatalf("slot %d after the race = %+v, want skipped, never attempted", n, got)
		}
	}
	wantNotFoundLease(t, b.Store, "job:report")
	// One skip row a slot, written by the contender that settled it.
	runs, err := b.Store.RunList(ctx(t), store.RunListParams{Job: "report"})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != slots {
		t.Fatalf("%d run rows after %d paused slots raced, want one a slot: %+v", len(runs), slots, runs)
	}
	for _, r := range runs {
		if !r.Skipped || r.Reason != string(store.ClaimPaused) || r.Owner != mustGetSlot(t, b.Store, r.Slot).Owner {
			t.Fatalf("run row %+v: want a paused skip by the replica that settled its slot", r)
		}
	}
	// Resumed, every contender finds every slot settled.
	setEnabled(t, b.Store, true)
	for n := 0; n < slots; n++ {
		slot := base.Add(time.Duration(n) * time.Second)
		for i, res := range race(stores, func(i int, s store.Store) error {
			r, err := s.SlotClaim(ctx(t), claimParams(slot, fmt.Sprintf("late-%02d", i), base.Add(time.Minute)))
			if err == nil && (r.Claimed || r.Refusal != store.ClaimSkipped) {
				err = fmt.Errorf("claimed %v, refusal %q; want refused as skipped", r.Claimed, r.Refusal)
			}
			return err
		}) {
			if res != nil {
				t.Fatalf("slot %d, late contender %d: %v", n, i, res)
			}
		}
	}
	wantNotFoundLease(t, b.Store, "job:report")
}

// raceResume lifts the pause while every other contender claims the same
// slot: whichever way each claim falls, the slot is either settled skipped
// and claimed by nobody, or claimed by exactly one contender; never both,
// and no claim fails.
func raceResume(t *testing.T, b Bundle) {
	stores := openContenders(t, b)
	base := dbNow(t, b.Store)
	const rounds = 10
	settled, ran := 0, 0
	for n := 0; n < rounds; n++ {
		slot := base.Add(time.Duration(n) * time.Second)
		setEnabled(t, b.Store, false)
		type result struct {
			r      store.SlotClaimResult
			resume bool
			err    error
		}
		results := race(stores, func(i int, s store.Store) result {
			if i == 0 {
				_, err := s.JobStateSet(ctx(t), store.JobStateSetParams{Job: "report", Enabled: ptr(true), By: "ana"})
				return result{resume: true, err: err}
			}
			r, err := s.SlotClaim(ctx(t), claimParams(slot, fmt.Sprintf("replica-%02d", i), slot))
			return result{r: r, err: err}
		})
		var winners []store.SlotClaimResult
		for i, res := range results {
			switch {
			case res.err != nil:
				t.Fatalf("round %d, contender %d: %v", n, i, res.err)
			case res.resume:
			case res.r.Claimed:
				winners = append(winners, res.r)
			case res.r.Refusal != store.ClaimPaused && res.r.Refusal != store.ClaimSkipped && res.r.Refusal != store.ClaimHeld:
				t.Fatalf("round %d, contender %d refused with %q", n, i, res.r.Refusal)
			}
		}
		got := mustGetSlot(t, b.Store, slot)
		switch {
		case got.Status == store.SlotSkipped && len(winners) == 0:
			settled++
		case got.Status == store.SlotRunning && len(winners) == 1 && got.Generation == winners[0].Lease.Generation:
			ran++
			mustFinish(t, b.Store, finishParams(winners[0], store.SlotCompleted, slot.Add(time.Millisecond)))
		default:
			t.Fatalf("round %d: slot %+v with %d winners; want skipped and none, or running by the one winner", n, got, len(winners))
		}
	}
	t.Logf("%d rounds: slot settled while paused in %d, run after the resume in %d", rounds, settled, ran)
}

// setEnabled sets the override of job "report".
func setEnabled(t *testing.T, s store.Store, enabled bool) {
	t.Helper()
	if _, err := s.JobStateSet(ctx(t), store.JobStateSetParams{Job: "report", Enabled: ptr(enabled), By: "ana"}); err != nil {
		t.Fatalf("JobStateSet(report, %v): %v", enabled, err)
	}
}

func mustGetSlot(t *testing.T, s store.Store, slot time.Time) store.Slot {
	t.Helper()
	return mustGetSlotOf(t, s, "report", slot)
}

func mustGetSlotOf(t *testing.T, s store.Store, job string, slot time.Time) store.Slot {
	t.Helper()
	got, err := s.SlotGet(ctx(t), job, slot)
	if err != nil {
		t.Fatalf("SlotGet(%q, %s): %v", job, slot, err)
	}
	return got
}

// wantRuns checks that the store's run rows, newest first, are want.
func wantRuns(t *testing.T, s store.Store, want ...store.Run) {
	t.Helper()
	runs, err := s.RunList(ctx(t), store.RunListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, runs, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("run rows (-want +got):\n%s", diff)
	}
}

func wantRunByID(t *testing.T, s store.Store, id int64) store.Run {
	t.Helper()
	runs, err := s.RunList(ctx(t), store.RunListParams{Job: "report"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("run %d not listed among %d runs", id, len(runs))
	return store.Run{}
}
