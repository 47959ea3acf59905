package storetest

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// skipParams gives up slot of job "report" at after, for owner.
func skipParams(slot, after time.Time, owner string, reason store.SkipReason, now time.Time) store.SlotSkipParams {
	return store.SlotSkipParams{
		Job: "report", Slot: slot, LeaseName: "job:report", Owner: owner, After: after,
		Reason: reason, Log: "Skipped: " + string(reason), Now: now,
	}
}

// skipTests cover Store.SlotSkip: a slot nobody will run is recorded once,
// final, with its reason, and never over a slot someone claimed or ran.
var skipTests = []namedTest{
	{name: "RecordsASlotWithoutARow", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Minute)
		p := skipParams(slot, now.Add(-time.Second), "a", store.SkipLeaseBusy, now)
		p.CatchUp = true
		runs, err := b.Store.SlotSkip(ctx(t), []store.SlotSkipParams{p})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 1 {
			t.Fatalf("SlotSkip wrote %d run rows, want 1: %+v", len(runs), runs)
		}
		r := runs[0]
		if r.ID == 0 || r.Job != "report" || !r.Slot.Equal(slot) || !r.Skipped || !r.Success || r.Reason != string(store.SkipLeaseBusy) ||
			!r.CatchUp || r.Owner != "a" || r.Manual || len(r.Logs) != 1 || r.Logs[0] != p.Log || !r.StartedAt.Equal(now) {
			t.Fatalf("skip run row = %+v", r)
		}
		if got := mustGetSlot(t, b.Store, slot); got.Status != store.SlotSkipped || got.Attempts != 0 || got.Owner != "a" {
			t.Fatalf("skipped slot row = %+v", got)
		}
		if listed, err := b.Store.RunList(ctx(t), store.RunListParams{Job: "report"}); err != nil || len(listed) != 1 || listed[0].ID != r.ID {
			t.Fatalf("RunList = %+v, %v; want the skip row alone", listed, err)
		}
		// Final: a late claim and a catch-up are refused.
		wantRefusal(t, b.Open(t), claimParams(slot, "b", now.Add(time.Second)), store.ClaimSkipped)
		again, err := b.Open(t).SlotSkip(ctx(t), []store.SlotSkipParams{skipParams(slot, now, "b", store.SkipPassedOver, now.Add(time.Second))})
		if err != nil || len(again) != 0 {
			t.Fatalf("a second skip of the slot = %+v, %v; want nothing written", again, err)
		}
	}},
	{name: "RecordsEachReason", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		reasons := []store.SkipReason{store.SkipLeaseBusy, store.SkipPassedOver, store.SkipExcluded}
		items := make([]store.SlotSkipParams, len(reasons))
		for i, reason := range reasons {
			items[i] = skipParams(now.Add(-time.Duration(i+1)*time.Minute), now.Add(-time.Second), "a", reason, now)
		}
		runs, err := b.Store.SlotSkip(ctx(t), items)
		if err != nil || len(runs) != len(items) {
			t.Fatalf("SlotSkip = %+v, %v; want %d rows", runs, err, len(items))
		}
		for i, r := range runs {
			if r.Reason != string(reasons[i]) || !r.Skipped || !r.Slot.Equal(items[i].Slot) {
				t.Errorf("skip row %d = %+v; want reason %s", i, r, reasons[i])
			}
		}
	}},
	{name: "LeavesClaimedAndRunSlots", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		running := mustClaim(t, b.Store, claimParams(now.Add(-2*time.Minute), "a", now))
		other := b.Open(t)
		done := claimParams(now.Add(-time.Minute), "b", now)
		done.Job, done.LeaseName = "billing", "job:billing"
		finished := mustClaim(t, other, done)
		mustFinish(t, other, finishParams(finished, store.SlotCompleted, now))
		before := b.Dump(t)
		billing := skipParams(finished.Slot.Slot, now, "c", store.SkipPassedOver, now.Add(time.Second))
		billing.Job, billing.LeaseName = "billing", "job:billing"
		runs, err := b.Store.SlotSkip(ctx(t), []store.SlotSkipParams{
			skipParams(running.Slot.Slot, now, "c", store.SkipPassedOver, now.Add(time.Second)), billing,
		})
		if err != nil || len(runs) != 0 {
			t.Fatalf("SlotSkip of a running and a completed slot = %+v, %v; want nothing written", runs, err)
		}
		if after := b.Dump(t); after != before {
			t.Fatalf("SlotSkip changed rows it must leave:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	}},
	{name: "WaitsForAfterByTheDatabaseClock", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Second)
		early := skipParams(slot, now.Add(time.Second), "a", store.SkipPassedOver, now)
		before := b.Dump(t)
		if runs, err := b.Store.SlotSkip(ctx(t), []store.SlotSkipParams{early}); err != nil || len(runs) != 0 {
			t.Fatalf("skip before its After = %+v, %v; want nothing written", runs, err)
		}
		if after := b.Dump(t); after != before {
			t.Fatalf("a skip before its After wrote:\n%s", after)
		}
		// The slot is still the claim's to take.
		mustClaim(t, b.Open(t), claimParams(slot, "b", now))
	}},
	{name: "BatchRecordsEachOnceInOrder", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		var items []store.SlotSkipParams
		for i := 3; i >= 1; i-- {
			slot := now.Add(-time.Duration(i) * time.Minute)
			items = append(items, skipParams(slot, slot.Add(time.Minute), "a", store.SkipPassedOver, now))
		}
		items[1].Log = strings.Repeat("x", store.MaxRunLogBytes) // bounded, not refused
		runs, err := b.Store.SlotSkip(ctx(t), items)
		if err != nil || len(runs) != 3 {
			t.Fatalf("SlotSkip of three slots = %d rows, %v", len(runs), err)
		}
		for i, r := range runs {
			if !r.Slot.Equal(items[i].Slot) || r.Reason != string(store.SkipPassedOver) {
				t.Errorf("row %d = slot %s reason %q; want slot %s in the items' order", i, r.Slot, r.Reason, items[i].Slot)
			}
		}
		if len(runs[1].Logs[0]) >= store.MaxRunLogBytes {
			t.Errorf("a long log line was kept whole (%d bytes)", len(runs[1].Logs[0]))
		}
	}},
	{name: "ConcurrentSkipsRecordOnce", serial: true, fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Minute)
		stores := make([]store.Store, contenders)
		for i := range stores {
			stores[i] = b.Open(t)
		}
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			written int
			errs    []error
		)
		start := make(chan struct{})
		for i, s := range stores {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				runs, err := s.SlotSkip(ctx(t), []store.SlotSkipParams{skipParams(slot, now, "r"+string(rune('a'+i%26)), store.SkipLeaseBusy, now)})
				mu.Lock()
				defer mu.Unlock()
				written += len(runs)
				if err != nil {
					errs = append(errs, err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if len(errs) > 0 || written != 1 {
			t.Fatalf("%d concurrent skips wrote %d run rows (errors %v); want 1", contenders, written, errs)
		}
		if runs, err := b.Store.RunList(ctx(t), store.RunListParams{Job: "report"}); err != nil || len(runs) != 1 {
			t.Fatalf("run rows = %d, %v; want 1", len(runs), err)
		}
	}},
	{name: "RefusesBadInput", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		good := skipParams(now.Add(-time.Minute), now, "a", store.SkipPassedOver, now)
		before := b.Dump(t)
		for name, items := range map[string][]store.SlotSkipParams{
			"no job":             {func() store.SlotSkipParams { p := good; p.Job = ""; return p }()},
			"no slot":            {func() store.SlotSkipParams { p := good; p.Slot = time.Time{}; return p }()},
			"after before slot":  {func() store.SlotSkipParams { p := good; p.After = p.Slot.Add(-time.Second); return p }()},
			"unknown reason":     {func() store.SlotSkipParams { p := good; p.Reason = "bored"; return p }()},
			"no owner":           {func() store.SlotSkipParams { p := good; p.Owner = ""; return p }()},
			"no lease name":      {func() store.SlotSkipParams { p := good; p.LeaseName = ""; return p }()},
			"slot twice":         {good, good},
			"two owners":         {good, func() store.SlotSkipParams { p := good; p.Slot, p.Owner = p.Slot.Add(-time.Minute), "b"; return p }()},
			"valid then invalid": {good, func() store.SlotSkipParams { p := good; p.Slot, p.Reason = p.Slot.Add(-time.Minute), ""; return p }()},
		} {
			_, err := b.Store.SlotSkip(ctx(t), items)
			wantErrIs(t, name, err, store.ErrInvalidArgument)
		}
		if after := b.Dump(t); after != before {
			t.Fatalf("refused skips wrote:\n%s", after)
		}
	}},
}
