package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

var batchTests = []namedTest{
	{name: "ClaimManyJobsAtOnce", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Second)
		item := func(job string) store.SlotClaimParams {
			return store.SlotClaimParams{Job: job, Slot: slot, LeaseName: "job:" + job, Owner: "a", TTL: ttl, MaxAttempts: 3, Now: now}
		}
		// Set up: "paused" is paused, "busy" is held by another run (since
		// before the slot: an overlap), "done" already completed.
		if _, err := b.Store.JobStateSet(ctx(t), store.JobStateSetParams{Job: "paused", Enabled: ptr(false), By: "ana"}); err != nil {
			t.Fatal(err)
		}
		mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: "job:busy", Owner: "z", TTL: ttl, Now: slot.Add(-time.Second)})
		done := mustClaim(t, b.Store, item("done"))
		mustFinish(t, b.Store, finishParams(done, store.SlotCompleted, now))

		items := []store.SlotClaimParams{item("fresh-1"), item("paused"), item("busy"), item("done"), item("fresh-2")}
		results, err := b.Open(t).SlotClaimBatch(ctx(t), items)
		if err != nil {
			t.Fatal(err)
		}
		if len(results) != len(items) {
			t.Fatalf("%d results for %d items", len(results), len(items))
		}
		want := []struct {
			claimed bool
			refusal store.ClaimRefusal
		}{{true, ""}, {false, store.ClaimPaused}, {false, store.ClaimHeld}, {false, store.ClaimCompleted}, {true, ""}}
		for i, w := range want {
			r := results[i]
			if r.Claimed != w.claimed || r.Refusal != w.refusal {
				t.Errorf("item %d (%s): claimed %v refusal %q, want %v %q", i, items[i].Job, r.Claimed, r.Refusal, w.claimed, w.refusal)
			}
			if r.Claimed && (r.Slot.Job != items[i].Job || r.Lease.Name != items[i].LeaseName) {
				t.Errorf("item %d: result for the wrong job: %+v", i, r)
			}
		}
		if results[2].Recorded != store.SlotSkipped || results[2].Lease.Owner != "z" {
			t.Errorf("busy item: recorded %q, holder %+v", results[2].Recorded, results[2].Lease)
		}
	}},
	{name: "EmptyAndBadBatches", fn: func(t *testing.T, b Bundle) {
		if res, err := b.Store.SlotClaimBatch(ctx(t), nil); err != nil || len(res) != 0 {
			t.Fatalf("empty batch = %v, %v", res, err)
		}
		now := time.Now()
		p := store.SlotClaimParams{Job: "j", Slot: now, LeaseName: "l", Owner: "o", TTL: ttl, MaxAttempts: 1}
		q := p
		q.Job = "k"
		r := p
		r.Job, r.LeaseName, r.Owner = "k", "m", "other"
		s := p
		s.Overlap = "sometimes"
		u := p
		u.LeaseName = "other-lease"
		for name, items := range map[string][]store.SlotClaimParams{
			"duplicate lease name": {p, q},
			"duplicate job slot":   {p, u},
			"mixed owners":         {p, r},
			"bad overlap policy":   {s},
		} {
			if _, err := b.Store.SlotClaimBatch(ctx(t), items); !errors.Is(err, store.ErrInvalidArgument) {
				t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
			}
		}
		wantNotFoundLease(t, b.Store, "l")
	}},
	{name: "RenewMany", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		var items []store.LeaseRenewParams
		for i := 0; i < 3; i++ {
			l := mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: fmt.Sprintf("l%d", i), Owner: "a", TTL: ttl, Now: now})
			items = append(items, store.LeaseRenewParams{LeaseRef: l.Ref(), TTL: 2 * ttl, Now: now.Add(time.Second)})
		}
		// l1 was taken over meanwhile (this replica was paused).
		mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: "l1", Owner: "b", TTL: ttl, Now: now.Add(ttl)})
		renewed, err := b.Store.LeaseRenewBatch(ctx(t), items)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]store.Lease{}
		for _, l := range renewed {
			got[l.Name] = l
		}
		if len(got) != 2 || got["l1"].Name != "" {
			t.Fatalf("renewed %v; want l0 and l2 only", renewed)
		}
		for _, name := range []string{"l0", "l2"} {
			if !got[name].ExpiresAt.Equal(now.Add(time.Second + 2*ttl)) {
				t.Fatalf("%s renewed to %s", name, got[name].ExpiresAt)
			}
		}
		if res, err := b.Store.LeaseRenewBatch(ctx(t), nil); err != nil || len(res) != 0 {
			t.Fatalf("empty renew batch = %v, %v", res, err)
		}
	}},
}

// raceOverlapSkip: while one run holds the job lease, every replica fires the
// next slot at once; exactly one records the skip.
func raceOverlapSkip(t *testing.T, b Bundle) {
	stores := openContenders(t, b)
	now := dbNow(t, b.Store)
	mustClaim(t, b.Store, claimParams(now.Add(-time.Minute), "holder", now))
	type result struct {
		r   store.SlotClaimResult
		err error
	}
	results := race(stores, func(i int, s store.Store) result {
		r, err := s.SlotClaim(ctx(t), claimParams(now, fmt.Sprintf("replica-%02d", i), now))
		return result{r, err}
	})
	recorded := 0
	for i, res := range results {
		if res.err != nil || res.r.Claimed {
			t.Fatalf("contender %d: claimed %v, %v", i, res.r.Claimed, res.err)
		}
		if res.r.Recorded == store.SlotSkipped {
			recorded++
		}
	}
	runs, err := b.Store.RunList(ctx(t), store.RunListParams{Job: "report"})
	if err != nil {
		t.Fatal(err)
	}
	if recorded != 1 || len(runs) != 1 || !runs[0].Skipped {
		t.Fatalf("%d contenders recorded the skip and %d run rows exist; want exactly 1 of each", recorded, len(runs))
	}
}

// finishBatchTests: SlotFinishBatch ends each item as SlotFinish would, in
// one transaction, and is safe to send again.
var finishBatchTests = []namedTest{
	{name: "FinishManyRunsAtOnce", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Second)
		claim := func(job string) store.SlotClaimResult {
			return mustClaim(t, b.Store, store.SlotClaimParams{Job: job, Slot: slot, LeaseName: "job:" + job, Owner: "a", TTL: ttl, MaxAttempts: 3, Now: now})
		}
		ok, failed, stale := claim("ok"), claim("failed"), claim("stale")
		manual := mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: "job:manual", Owner: "a", TTL: ttl, Now: now})
		staleParams := finishParams(stale, store.SlotCompleted, now)
		staleParams.Generation++ // a holding that is not the slot's: taken over, as far as the store can tell
		items := []store.SlotFinishParams{
			finishParams(ok, store.SlotCompleted, now),
			finishParams(failed, store.SlotFailed, now),
			staleParams,
			{Job: "manual", LeaseName: manual.Name, Owner: "a", Generation: manual.Generation, Status: store.SlotCompleted, Now: now,
				Run: store.Run{Manual: true, Success: true}},
		}
		results, err := b.Open(t).SlotFinishBatch(ctx(t), items)
		if err != nil {
			t.Fatal(err)
		}
		if len(results) != len(items) {
			t.Fatalf("%d results for %d items", len(results), len(items))
		}
		want := []struct {
			updated, released bool
			status            store.SlotStatus
		}{{true, true, store.SlotCompleted}, {true, true, store.SlotFailed}, {false, false, ""}, {false, true, ""}}
		for i, w := range want {
			r := results[i]
			if r.SlotUpdated != w.updated || r.LeaseReleased != w.released || r.SlotStatus != w.status || r.Run.ID == 0 || r.Run.Job != items[i].Job {
				t.Errorf("item %d (%s): %+v; want updated %v, released %v, status %q and its own run row", i, items[i].Job, r, w.updated, w.released, w.status)
			}
		}
		if sl, err := b.Store.SlotGet(ctx(t), "stale", slot); err != nil || sl.Status != store.SlotRunning {
			t.Errorf("the stale holding's slot: %+v, %v; want still running", sl, err)
		}
		// Sent again (its answer lost): the same rows, none written twice,
		// as SlotFinish retried (a failed slot then reads as not this
		// holding's: SlotAbandon may have ended it).
		again, err := b.Store.SlotFinishBatch(ctx(t), items)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if again[i].Run.ID != results[i].Run.ID || again[i].SlotUpdated != (i == 0) {
				t.Errorf("item %d sent again: %+v, first %+v; want the first row", i, again[i], results[i])
			}
		}
	}},
	{name: "ClaimAndFinishHundredsAtOnce", fn: func(t *testing.T, b Bundle) {
		// Batches the size a busy replica sends (a PostgreSQL store plans
		// these for their size and sends their arrays inline), with every
		// kind of item among them and log lines that need quoting.
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Second)
		const n = 250
		item := func(i int) store.SlotClaimParams {
			job := fmt.Sprintf("job-%03d", i)
			return store.SlotClaimParams{Job: job, Slot: slot, LeaseName: "job:" + job, Owner: "a", TTL: ttl, MaxAttempts: 3, Now: now}
		}
		// job-007 is paused, job-011's lease is held by another run,
		// job-013 completed already.
		if _, err := b.Store.JobStateSet(ctx(t), store.JobStateSetParams{Job: "job-007", Enabled: ptr(false), By: "ana"}); err != nil {
			t.Fatal(err)
		}
		mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: "job:job-011", Owner: "z", TTL: ttl, Now: slot.Add(-time.Second)})
		mustFinish(t, b.Store, finishParams(mustClaim(t, b.Store, item(13)), store.SlotCompleted, now))
		items := make([]store.SlotClaimParams, n)
		for i := range items {
			items[i] = item(n - 1 - i) // not in lease name order
		}
		claims, err := b.Open(t).SlotClaimBatch(ctx(t), items)
		if err != nil {
			t.Fatal(err)
		}
		var finishes []store.SlotFinishParams
		var wantStatus []store.SlotStatus
		for i, r := range claims {
			job := items[i].Job
			switch job {
			case "job-007":
				if r.Claimed || r.Refusal != store.ClaimPaused {
					t.Errorf("%s: %+v; want refused %s", job, r, store.ClaimPaused)
				}
				continue
			case "job-011":
				if r.Claimed || r.Refusal != store.ClaimHeld || r.Recorded != store.SlotSkipped || r.Lease.Owner != "z" {
					t.Errorf("%s: %+v; want refused %s, recorded skipped, holder z", job, r, store.ClaimHeld)
				}
				continue
			case "job-013":
				if r.Claimed || r.Refusal != store.ClaimCompleted {
					t.Errorf("%s: %+v; want refused %s", job, r, store.ClaimCompleted)
				}
				continue
			}
			if !r.Claimed || r.Slot.Job != job || r.Lease.Name != items[i].LeaseName {
				t.Fatalf("%s: %+v; want claimed under its own lease", job, r)
			}
			status := store.SlotCompleted
			if i%5 == 0 {
				status = store.SlotFailed
			}
			p := finishParams(r, status, now)
			p.Run.Logs = []string{fmt.Sprintf("run %d", i), `quotes ' " and \ { } , NULL`, "two\nlines\n", "", "ünïcödé ✓"}[:i%6]
			finishes = append(finishes, p)
			wantStatus = append(wantStatus, status)
		}
		// One holding this owner no longer has (taken over, as far as
		// the store can tell).
		finishes[3].Generation++
		wantStatus[3] = ""
		results, err := b.Open(t).SlotFinishBatch(ctx(t), finishes)
		if err != nil {
			t.Fatal(err)
		}
		if len(results) != len(finishes) {
			t.Fatalf("%d results for %d items", len(results), len(finishes))
		}
		for i, r := range results {
			p := finishes[i]
			if r.SlotStatus != wantStatus[i] || r.SlotUpdated != (wantStatus[i] != "") || r.LeaseReleased != (wantStatus[i] != "") {
				t.Errorf("item %d (%s): %+v; want slot %q", i, p.Job, r, wantStatus[i])
			}
			if r.Run.ID == 0 || r.Run.Job != p.Job || r.Run.Generation != p.Generation || !slices.Equal(r.Run.Logs, p.Run.Logs) {
				t.Errorf("item %d (%s): run %+v; want its own row with logs %q", i, p.Job, r.Run, p.Run.Logs)
			}
		}
		for i, p := range finishes {
			runs, err := b.Store.RunList(ctx(t), store.RunListParams{Job: p.Job, Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(runs) != 1 || !slices.Equal(runs[0].Logs, p.Run.Logs) {
				t.Fatalf("item %d (%s): stored runs %+v; want its logs %q", i, p.Job, runs, p.Run.Logs)
			}
		}
	}},
	{name: "FinishBatchRefusesAHoldingTwice", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		r := mustClaim(t, b.Store, store.SlotClaimParams{Job: "once", Slot: now.Add(-time.Second), LeaseName: "job:once", Owner: "a", TTL: ttl, MaxAttempts: 1, Now: now})
		p := finishParams(r, store.SlotCompleted, now)
		_, err := b.Store.SlotFinishBatch(ctx(t), []store.SlotFinishParams{p, p})
		if !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), "item 1") {
			t.Fatalf("batch ending one holding twice: %v; want ErrInvalidArgument naming item 1", err)
		}
		if sl, err := b.Store.SlotGet(ctx(t), "once", r.Slot.Slot); err != nil || sl.Status != store.SlotRunning {
			t.Fatalf("the slot after the refused batch: %+v, %v; want untouched, running", sl, err)
		}
	}},
	{name: "FinishBatchRefusesABadItemWhole", fn: func(t *testing.T, b Bundle) {
		if res, err := b.Store.SlotFinishBatch(ctx(t), nil); err != nil || len(res) != 0 {
			t.Fatalf("empty batch = %v, %v", res, err)
		}
		now := dbNow(t, b.Store)
		r := mustClaim(t, b.Store, store.SlotClaimParams{Job: "good", Slot: now.Add(-time.Second), LeaseName: "job:good", Owner: "a", TTL: ttl, MaxAttempts: 1, Now: now})
		bad := finishParams(r, store.SlotCompleted, now)
		bad.Job = ""
		_, err := b.Store.SlotFinishBatch(ctx(t), []store.SlotFinishParams{finishParams(r, store.SlotCompleted, now), bad})
		if !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), "item 1") {
			t.Fatalf("batch with a bad item: %v; want ErrInvalidArgument naming item 1", err)
		}
		if sl, err := b.Store.SlotGet(ctx(t), "good", r.Slot.Slot); err != nil || sl.Status != store.SlotRunning {
			t.Fatalf("the good item's slot after the refused batch: %+v, %v; want untouched, running", sl, err)
		}
	}},
}
