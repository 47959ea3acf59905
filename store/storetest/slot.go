package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cronfence/cronfence/store"
)

// claimParams are the claim of job "report" at slot by owner, pinned at now.
func claimParams(slot time.Time, owner string, now time.Time) store.SlotClaimParams {
	return store.SlotClaimParams{Job: "report", Slot: slot, LeaseName: "job:report", Owner: owner, TTL: ttl, MaxAttempts: 3, Now: now}
}

func finishParams(r store.SlotClaimResult, status store.SlotStatus, now time.Time) store.SlotFinishParams {
	return store.SlotFinishParams{
		Job: r.Slot.Job, Slot: r.Slot.Slot, LeaseName: r.Lease.Name, Owner: r.Lease.Owner, Generation: r.Lease.Generation,
		Status: status, Now: now,
		Run: store.Run{Attempt: r.Slot.Attempts, Success: status == store.SlotCompleted, Logs: []string{"done"}},
	}
}

func mustFinish(t *testing.T, s store.Store, p store.SlotFinishParams) store.SlotFinishResult {
	t.Helper()
	res, err := s.SlotFinish(ctx(t), p)
	if err != nil {
		t.Fatalf("SlotFinish: %v", err)
	}
	return res
}

func wantRefusal(t *testing.T, s store.Store, p store.SlotClaimParams, want store.ClaimRefusal) store.SlotClaimResult {
	t.Helper()
	r, err := s.SlotClaim(ctx(t), p)
	if err != nil {
		t.Fatalf("SlotClaim by %q: %v", p.Owner, err)
	}
	if r.Claimed || r.Refusal != want {
		t.Fatalf("SlotClaim by %q = claimed %v, refusal %q; want refusal %q (slot %+v)", p.Owner, r.Claimed, r.Refusal, want, r.Slot)
	}
	return r
}

var slotTests = []namedTest{
	{name: "ClaimFresh", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Second)
		r := mustClaim(t, b.Store, claimParams(slot, "a", now))
		want := store.Slot{Job: "report", Slot: slot, Status: store.SlotRunning, Owner: "a", LeaseName: "job:report", Generation: 1, Attempts: 1, StartedAt: now}
		if diff := cmp.Diff(want, r.Slot); diff != "" {
			t.Fatalf("claimed slot (-want +got):\n%s", diff)
		}
		wantLease := store.Lease{Name: "job:report", Owner: "a", Generation: 1, AcquiredAt: now, RenewedAt: now, ExpiresAt: now.Add(ttl)}
		if diff := cmp.Diff(wantLease, r.Lease); diff != "" {
			t.Fatalf("claim's lease (-want +got):\n%s", diff)
		}
		got, err := b.Store.SlotGet(ctx(t), "report", slot)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("SlotGet (-want +got):\n%s", diff)
		}
		if l, _ := b.Store.LeaseGet(ctx(t), "job:report"); l.Owner != "a" || l.Generation != 1 {
			t.Fatalf("the claim's lease is %+v, want held by a at generation 1", l)
		}
	}},
	{name: "NotDue", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		wantRefusal(t, b.Store, claimParams(now.Add(time.Second), "a", now), store.ClaimNotDue)
		if _, err := b.Store.SlotGet(ctx(t), "report", now.Add(time.Second)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a refused claim wrote a slot: %v", err)
		}
		wantNotFoundLease(t, b.Store, "job:report")
	}},
	{name: "WaitDue", fn: func(t *testing.T, b Bundle) {
		// A claim sent before its slot, asking to wait, is judged at the
		// slot's instant by the database clock: it wins, and nothing it
		// writes is dated before the slot. A batch waits for its latest
		// slot.
		now := dbNow(t, b.Store)
		early := func(job string, in time.Duration) store.SlotClaimParams {
			return store.SlotClaimParams{Job: job, Slot: now.Add(in), LeaseName: "job:" + job, Owner: "a", TTL: ttl, MaxAttempts: 3, WaitDue: true}
		}
		items := []store.SlotClaimParams{early("report", 20*time.Millisecond), early("mail", 60*time.Millisecond)}
		res, err := b.Store.SlotClaimBatch(ctx(t), items)
		if err != nil {
			t.Fatal(err)
		}
		latest := items[1].Slot
		// Nor may its run start before then: a winner starts once the
		// answer's Wait has passed (zero for a store that answers after
		// the slot).
		waitOut(t, res)
		if started := dbNow(t, b.Store); started.Before(latest) {
			t.Fatalf("the claim's run would start at %s by the database clock (its answer's Wait %s passed), before the batch's latest slot %s",
				started.Format(time.RFC3339Nano), res[0].Wait, latest.Format(time.RFC3339Nano))
		}
		for i, r := range res {
			if !r.Claimed {
				t.Fatalf("item %d: a claim that may wait for its slot was refused %q", i, r.Refusal)
			}
			if r.Slot.StartedAt.Before(latest) || r.Lease.AcquiredAt.Before(latest) {
				t.Fatalf("item %d started at %s, lease taken at %s: before the batch's latest slot %s by the database clock",
					i, r.Slot.StartedAt.Format(time.RFC3339Nano), r.Lease.AcquiredAt.Format(time.RFC3339Nano), latest.Format(time.RFC3339Nano))
			}
		}
		// A large batch too (PostgreSQL plans one of over 100 items for
		// its size, and sends it another way).
		now = dbNow(t, b.Store)
		large := make([]store.SlotClaimParams, 150)
		for i := range large {
			large[i] = early(fmt.Sprintf("large-%03d", i), 40*time.Millisecond)
		}
		res, err = b.Store.SlotClaimBatch(ctx(t), large)
		if err != nil {
			t.Fatal(err)
		}
		waitOut(t, res)
		if started := dbNow(t, b.Store); started.Before(large[0].Slot) {
			t.Fatalf("large batch: the run would start at %s by the database clock, before its slot %s",
				started.Format(time.RFC3339Nano), large[0].Slot.Format(time.RFC3339Nano))
		}
		for i, r := range res {
			if !r.Claimed || r.Slot.StartedAt.Before(large[i].Slot) {
				t.Fatalf("large batch, item %d = claimed %v (refusal %q) at %s; want claimed at or after its slot %s",
					i, r.Claimed, r.Refusal, r.Slot.StartedAt.Format(time.RFC3339Nano), large[i].Slot.Format(time.RFC3339Nano))
			}
		}
		// Too far ahead to wait for: refused at once, nothing written.
		now = dbNow(t, b.Store)
		far := early("far", store.MaxClaimWait+time.Minute)
		wantRefusal(t, b.Store, far, store.ClaimNotDue)
		if _, err := b.Store.SlotGet(ctx(t), "far", far.Slot); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a claim refused not_due wrote its slot: %v", err)
		}
		// A pinned clock does not move: nothing to wait for.
		pinned := early("pinned", 50*time.Millisecond)
		pinned.Now = now
		wantRefusal(t, b.Store, pinned, store.ClaimNotDue)
		// And a claim that does not ask to wait is refused, as ever.
		eager := early("eager", time.Minute)
		eager.WaitDue = false
		wantRefusal(t, b.Store, eager, store.ClaimNotDue)
	}},
	{name: "HeldByRunningOwner", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Second)
		a := mustClaim(t, b.Store, claimParams(slot, "a", now))
		r := wantRefusal(t, b.Open(t), claimParams(slot, "b", now.Add(time.Second)), store.ClaimHeld)
		if r.Lease.Owner != "a" || r.Lease.Generation != a.Lease.Generation {
			t.Fatalf("refusal names holder %+v, want a at generation %d", r.Lease, a.Lease.Generation)
		}
	}},
	{name: "OverlapRecordsSkipNamingHolder", fn: func(t *testing.T, b Bundle) {
		// The run of one slot still holds the job lease when the next slot
		// comes due: the next slot is refused, recorded as skipped with a
		// skip run row naming the holder, once.
		now := dbNow(t, b.Store)
		a := mustClaim(t, b.Store, claimParams(now.Add(-time.Minute), "a", now))
		r := wantRefusal(t, b.Store, claimParams(now, "b", now), store.ClaimHeld)
		if r.Lease.Owner != "a" || r.Lease.Generation != a.Lease.Generation {
			t.Fatalf("refusal names holder %+v, want a", r.Lease)
		}
		if r.Recorded != store.SlotSkipped || r.SkipRun.ID == 0 || !r.SkipRun.Skipped || !r.SkipRun.Success ||
			r.SkipRun.Reason != "already_executing" || len(r.SkipRun.Logs) != 1 || !strings.Contains(r.SkipRun.Logs[0], "held by a at generation 1") {
			t.Fatalf("overlap recorded %q with skip row %+v; want skipped, a skip row naming a", r.Recorded, r.SkipRun)
		}
		got, err := b.Store.SlotGet(ctx(t), "report", now)
		if err != nil || got.Status != store.SlotSkipped || got.Attempts != 0 {
			t.Fatalf("overlapped slot = %+v, %v; want skipped, never attempted", got, err)
		}
		// Another replica firing late finds it already recorded.
		again := wantRefusal(t, b.Open(t), claimParams(now, "c", now.Add(time.Second)), store.ClaimSkipped)
		if again.Recorded != "" || again.SkipRun.ID != 0 {
			t.Fatalf("a second replica recorded the skip again: %+v", again)
		}
		// Skipped is final: not even after the holder finished.
		mustFinish(t, b.Store, finishParams(a, store.SlotCompleted, now.Add(2*time.Second)))
		wantRefusal(t, b.Store, claimParams(now, "c", now.Add(3*time.Second)), store.ClaimSkipped)
		runs, err := b.Store.RunList(ctx(t), store.RunListParams{Job: "report"})
		if err != nil {
			t.Fatal(err)
		}
		skips := 0
		for _, run := range runs {
			if run.Skipped {
				skips++
				if diff := cmp.Diff(r.SkipRun, run); diff != "" {
					t.Fatalf("listed skip row differs from the returned one (-returned +listed):\n%s", diff)
				}
			}
		}
		if skips != 1 {
			t.Fatalf("%d skip rows, want exactly 1", skips)
		}
	}},
	{name: "LateClaimBehindALaterHolderIsBuffered", fn: func(t *testing.T, b Bundle) {
		// The holder took the lease after the slot came due (a catch-up or
		// resumed run of an earlier slot started first): the slot did not
		// overlap a run, its claim arrived late. It is buffered to run when
		// the holder ends, under the skip policy too, and no skip is
		// recorded; once one slot is buffered, further late ones are
		// skipped.
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Minute)
		holder := mustClaim(t, b.Store, claimParams(now.Add(-2*time.Minute), "a", slot.Add(time.Second)))
		r := wantRefusal(t, b.Open(t), claimParams(slot, "b", slot.Add(2*time.Second)), store.ClaimHeld)
		if r.Recorded != store.SlotBuffered || r.SkipRun.ID != 0 || r.Lease.Owner != "a" {
			t.Fatalf("late claim behind a later holder: %+v; want buffered, no skip row, naming a", r)
		}
		if r := wantRefusal(t, b.Store, claimParams(slot.Add(time.Second/2), "b", slot.Add(2*time.Second)), store.ClaimHeld); r.Recorded != store.SlotSkipped {
			t.Fatalf("a second late slot while one is buffered: recorded %q, want skipped", r.Recorded)
		}
		res := mustFinish(t, b.Store, finishParams(holder, store.SlotCompleted, slot.Add(3*time.Second)))
		if !res.Buffered.Equal(slot) {
			t.Fatalf("the holder's finish reports buffered %s, want %s", res.Buffered, slot)
		}
		mustClaim(t, b.Store, claimParams(slot, "a", slot.Add(4*time.Second)))
	}},
	{name: "OverlapBufferOne", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		buffer := func(p store.SlotClaimParams) store.SlotClaimParams { p.Overlap = store.OverlapBuffer; return p }
		a := mustClaim(t, b.Store, buffer(claimParams(now.Add(-3*time.Minute), "a", now)))
		r := wantRefusal(t, b.Store, buffer(claimParams(now.Add(-2*time.Minute), "b", now)), store.ClaimHeld)
		if r.Recorded != store.SlotBuffered || r.SkipRun.ID != 0 {
			t.Fatalf("first overlapped slot recorded %q (skip row %d), want buffered without a skip row", r.Recorded, r.SkipRun.ID)
		}
		// One is buffered already: the next overlapped slot is skipped.
		if r := wantRefusal(t, b.Store, buffer(claimParams(now.Add(-time.Minute), "b", now)), store.ClaimHeld); r.Recorded != store.SlotSkipped {
			t.Fatalf("second overlapped slot recorded %q, want skipped", r.Recorded)
		}
		res := mustFinish(t, b.Store, finishParams(a, store.SlotCompleted, now.Add(time.Second)))
		if !res.Buffered.Equal(now.Add(-2 * time.Minute)) {
			t.Fatalf("finish reports buffered slot %s, want %s", res.Buffered, now.Add(-2*time.Minute))
		}
		c := mustClaim(t, b.Store, buffer(claimParams(res.Buffered, "a", now.Add(2*time.Second))))
		if c.Slot.Attempts != 1 {
			t.Fatalf("the buffered slot ran as attempt %d, want 1", c.Slot.Attempts)
		}
		if res := mustFinish(t, b.Store, finishParams(c, store.SlotCompleted, now.Add(3*time.Second))); !res.Buffered.IsZero() {
			t.Fatalf("after the buffered run, finish still reports %s buffered", res.Buffered)
		}
	}},
	{name: "OverlapWaitRecordsNothing", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		wait := func(p store.SlotClaimParams) store.SlotClaimParams { p.Overlap = store.OverlapWait; return p }
		a := mustClaim(t, b.Store, claimParams(now.Add(-3*time.Minute), "a", now))
		// A slot due before the holder took the lease (which buffer-one or a
		// late claim would buffer) and one due after it (an overlap, which
		// skip would record): neither gets a row, and either is claimed
		// once the holder is done.
		for _, slot := range []time.Time{now.Add(-4 * time.Minute), now.Add(-2 * time.Minute)} {
			r := wantRefusal(t, b.Open(t), wait(claimParams(slot, "b", now.Add(time.Second))), store.ClaimHeld)
			if r.Recorded != "" || r.SkipRun.ID != 0 || r.Lease.Owner != "a" {
				t.Fatalf("slot %s: recorded %q (skip row %d), holder %q; want nothing recorded, holder a", slot, r.Recorded, r.SkipRun.ID, r.Lease.Owner)
			}
			if got, err := b.Store.SlotGet(ctx(t), "report", slot); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("slot %s has a row %+v (err %v); want none", slot, got, err)
			}
		}
		mustFinish(t, b.Store, finishParams(a, store.SlotCompleted, now.Add(2*time.Second)))
		c := mustClaim(t, b.Open(t), wait(claimParams(now.Add(-2*time.Minute), "b", now.Add(3*time.Second))))
		if c.Slot.Attempts != 1 || c.Slot.Owner != "b" {
			t.Fatalf("the waiting slot ran as %+v, want attempt 1 by b", c.Slot)
		}
	}},
	{name: "ManualRunHoldsLeaseAndFinishes", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		manual := mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: "job:report", Owner: "operator-replica", TTL: ttl, Now: now})
		// A slot that comes due during the manual run is skipped, recorded.
		r := wantRefusal(t, b.Open(t), claimParams(now, "b", now), store.ClaimHeld)
		if r.Recorded != store.SlotSkipped || r.Lease.Owner != "operator-replica" {
			t.Fatalf("slot during a manual run: recorded %q, holder %+v", r.Recorded, r.Lease)
		}
		res := mustFinish(t, b.Store, store.SlotFinishParams{
			Job: "report", LeaseName: manual.Name, Owner: manual.Owner, Generation: manual.Generation,
			Status: store.SlotCompleted, Now: now.Add(time.Second), Run: store.Run{Manual: true, Success: true},
		})
		if res.SlotUpdated || !res.LeaseReleased || !res.Run.Manual || !res.Run.Slot.IsZero() {
			t.Fatalf("manual finish = %+v; want lease released and a manual run row without a slot", res)
		}
	}},
	{name: "CompletedNeverClaimedAgain", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Second)
		r := mustClaim(t, b.Store, claimParams(slot, "a", now))
		res := mustFinish(t, b.Store, finishParams(r, store.SlotCompleted, now.Add(time.Second)))
		if !res.SlotUpdated || !res.LeaseReleased {
			t.Fatalf("finish = %+v, want slot updated and lease released", res)
		}
		for _, at := range []time.Time{now.Add(2 * time.Second), now.Add(time.Hour), now.Add(30 * 24 * time.Hour)} {
			wantRefusal(t, b.Open(t), claimParams(slot, "b", at), store.ClaimCompleted)
		}
		got, _ := b.Store.SlotGet(ctx(t), "report", slot)
		if got.Status != store.SlotCompleted || got.Owner != "a" || got.Attempts != 1 {
			t.Fatalf("completed slot became %+v", got)
		}
		l, _ := b.Store.LeaseGet(ctx(t), "job:report")
		if l.Generation != 1 {
			t.Fatalf("refused claims moved the lease to generation %d; a completed slot must not spend one", l.Generation)
		}
	}},
	{name: "InterruptedResumes", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Second)
		a := mustClaim(t, b.Store, claimParams(slot, "a", now))
		// A dies mid-run; its lease runs out; B claims the slot again.
		other := b.Open(t)
		r := mustClaim(t, other, claimParams(slot, "b", now.Add(ttl)))
		if r.Slot.Attempts != 2 || r.Slot.Generation != a.Lease.Generation+1 || r.Slot.Owner != "b" {
			t.Fatalf("re-claim = %+v, want attempt 2 by b at generation %d", r.Slot, a.Lease.Generation+1)
		}
		// A's late finish neither completes B's slot nor frees B's lease,
		// but its run row is kept as the record of what A did.
		res := mustFinish(t, b.Store, finishParams(a, store.SlotCompleted, now.Add(ttl+time.Second)))
		if res.SlotUpdated || res.LeaseReleased {
			t.Fatalf("A's stale finish = %+v; want neither the slot nor the lease touched", res)
		}
		if res.Run.ID == 0 || res.Run.Owner != "a" || res.Run.Generation != a.Lease.Generation {
			t.Fatalf("A's run row = %+v", res.Run)
		}
		got, _ := b.Store.SlotGet(ctx(t), "report", slot)
		if got.Status != store.SlotRunning || got.Owner != "b" {
			t.Fatalf("after A's stale finish the slot is %+v, want running by b", got)
		}
		res = mustFinish(t, other, finishParams(r, store.SlotCompleted, now.Add(ttl+2*time.Second)))
		if !res.SlotUpdated || !res.LeaseReleased {
			t.Fatalf("B's finish = %+v", res)
		}
	}},
	{name: "FailedClaimedAgainOnlyByARetry", fn: func(t *testing.T, b Bundle) {
		// A replica whose timer fired after the slot's run failed must not
		// run it again at once: only a retry, after its backoff, does.
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Second)
		r := mustClaim(t, b.Store, claimParams(slot, "a", now))
		mustFinish(t, b.Store, finishParams(r, store.SlotFailed, now))
		late := wantRefusal(t, b.Open(t), claimParams(slot, "b", now.Add(time.Millisecond)), store.ClaimFailed)
		if late.Slot.Status != store.SlotFailed || late.Slot.Attempts != 1 || late.Slot.Owner != "a" {
			t.Fatalf("refusal's slot = %+v, want the failed row as it stands", late.Slot)
		}
		catchUp := claimParams(slot, "c", now.Add(time.Minute))
		catchUp.CatchUp = true
		wantRefusal(t, b.Open(t), catchUp, store.ClaimFailed)
		if got := mustGetSlot(t, b.Store, slot); got.Status != store.SlotFailed || got.Attempts != 1 {
			t.Fatalf("slot after refused claims = %+v, want failed, attempt 1", got)
		}
		retry := claimParams(slot, "b", now.Add(10*time.Second))
		retry.RetryFailed, retry.RetryOf = true, 1
		r2 := mustClaim(t, b.Open(t), retry)
		if r2.Slot.Attempts != 2 || r2.Slot.Owner != "b" {
			t.Fatalf("retry = %+v, want attempt 2 by b", r2.Slot)
		}
		// Attempt 2 fails too: a retry armed after attempt 1 (a replica
		// that did not see the second) does not take it; a retry of 2 does.
		mustFinish(t, b.Store, finishParams(r2, store.SlotFailed, now.Add(11*time.Second)))
		stale := claimParams(slot, "a", now.Add(12*time.Second))
		stale.RetryFailed, stale.RetryOf = true, 1
		wantRefusal(t, b.Open(t), stale, store.ClaimFailed)
		stale.RetryOf = 2
		if r3 := mustClaim(t, b.Open(t), stale); r3.Slot.Attempts != 3 {
			t.Fatalf("retry of attempt 2 = %+v, want attempt 3", r3.Slot)
		}
		// A retry flag changes nothing for a slot that is not failed.
		other := claimParams(slot, "a", now)
		other.Job, other.LeaseName, other.RetryFailed = "fresh", "job:fresh", true
		if r3 := mustClaim(t, b.Store, other); r3.Slot.Attempts != 1 {
			t.Fatalf("retry-flagged claim of a new slot = %+v, want attempt 1", r3.Slot)
		}
	}},
	{name: "FailedOpenToARetryIsListedUntilRetryUntil", fn: func(t *testing.T, b Bundle) {
		// A slot whose attempt failed with attempts left stays listed,
		// failed, until its RetryUntil, so a live replica retries it when
		// the one whose attempt failed is gone; one without is never.
		now := dbNow(t, b.Store)
		open := func(job string, slot time.Time, until time.Time, batch bool) {
			t.Helper()
			p := claimParams(slot, "a", now)
			p.Job, p.LeaseName = job, "job:"+job
			f := finishParams(mustClaim(t, b.Store, p), store.SlotFailed, now)
			f.RetryUntil = until
			if batch {
				if _, err := b.Store.SlotFinishBatch(ctx(t), []store.SlotFinishParams{f}); err != nil {
					t.Fatal(err)
				}
				return
			}
			mustFinish(t, b.Store, f)
		}
		open("retried", now.Add(-time.Minute), now.Add(time.Hour), false)
		open("batched", now.Add(-time.Minute), now.Add(time.Hour), true)
		open("last", now.Add(-time.Minute), time.Time{}, false)
		open("overtaken", now.Add(-time.Minute), now.Add(-time.Second), false)
		listed := func() map[string]store.Slot {
			t.Helper()
			dead, err := b.Store.SlotListInterrupted(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]store.Slot{}
			for _, sl := range dead {
				out[sl.Job] = sl
			}
			return out
		}
		got := listed()
		if len(got) != 2 {
			t.Fatalf("listed %v; want the two slots open to a retry", got)
		}
		for _, job := range []string{"retried", "batched"} {
			if sl := got[job]; sl.Status != store.SlotFailed || sl.Attempts != 1 || !sl.FinishedAt.Equal(now) {
				t.Errorf("%s listed as %+v; want failed, attempt 1, finished at %s", job, sl, now)
			}
		}
		// Retried: running under a live lease, no longer listed.
		retry := claimParams(now.Add(-time.Minute), "b", now.Add(time.Second))
		retry.Job, retry.LeaseName, retry.RetryFailed = "retried", "job:retried", true
		r := mustClaim(t, b.Store, retry)
		if got := listed(); len(got) != 1 || got["batched"].Job == "" {
			t.Fatalf("after the retry's claim, listed %v; want only the batched slot", got)
		}
		// Its last attempt failed too, without RetryUntil: not listed again.
		mustFinish(t, b.Store, finishParams(r, store.SlotFailed, now.Add(2*time.Second)))
		if _, ok := listed()["retried"]; ok {
			t.Fatal("a slot whose last attempt failed is listed for a retry")
		}
		// RetryUntil needs a failed slot.
		done := claimParams(now.Add(-time.Minute), "a", now)
		done.Job, done.LeaseName = "done", "job:done"
		f := finishParams(mustClaim(t, b.Store, done), store.SlotCompleted, now)
		f.RetryUntil = now.Add(time.Hour)
		if _, err := b.Store.SlotFinish(ctx(t), f); !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), "RetryUntil") {
			t.Fatalf("finish completed with RetryUntil: %v, want an invalid argument naming RetryUntil", err)
		}
	}},
	{name: "FailedRetriedUntilMaxAttempts", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Second)
		p := claimParams(slot, "a", now)
		p.MaxAttempts = 2
		p.RetryFailed = true
		for attempt := 1; attempt <= 2; attempt++ {
			r := mustClaim(t, b.Store, p)
			if r.Slot.Attempts != attempt {
				t.Fatalf("claim %d has attempts %d", attempt, r.Slot.Attempts)
			}
			mustFinish(t, b.Store, finishParams(r, store.SlotFailed, now))
		}
		wantRefusal(t, b.Store, p, store.ClaimAttemptsExhausted)
		got, _ := b.Store.SlotGet(ctx(t), "report", slot)
		if got.Status != store.SlotFailed || got.Attempts != 2 || got.FinishedAt.IsZero() {
			t.Fatalf("exhausted slot = %+v, want failed after 2 attempts", got)
		}
	}},
	{name: "FinishWritesRunAndFreesLease", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Minute)
		r := mustClaim(t, b.Store, claimParams(slot, "a", now))
		p := finishParams(r, store.SlotFailed, now.Add(3*time.Second))
		p.Run.Error = "exit status 3"
		p.Run.CatchUp = true
		res := mustFinish(t, b.Store, p)
		want := store.Run{
			ID: res.Run.ID, Job: "report", Slot: slot, CatchUp: true, Owner: "a", Generation: r.Lease.Generation,
			LeaseName: "job:report", Attempt: 1, StartedAt: now, FinishedAt: now.Add(3 * time.Second), Success: false, Error: "exit status 3", Logs: []string{"done"},
		}
		if diff := cmp.Diff(want, res.Run); diff != "" {
			t.Fatalf("run row (-want +got):\n%s", diff)
		}
		runs, err := b.Store.RunList(ctx(t), store.RunListParams{Job: "report"})
		if err != nil || len(runs) != 1 {
			t.Fatalf("RunList = %d rows, %v", len(runs), err)
		}
		if diff := cmp.Diff(want, runs[0]); diff != "" {
			t.Fatalf("listed run (-want +got):\n%s", diff)
		}
		// The lease is free at once for the next slot.
		mustClaim(t, b.Store, claimParams(now, "b", now.Add(4*time.Second)))
	}},
	{name: "ListInterrupted", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		claim := func(job string, at time.Time) store.SlotClaimResult {
			p := claimParams(at.Add(-time.Second), "a", at)
			p.Job, p.LeaseName = job, "job:"+job
			return mustClaim(t, b.Store, p)
		}
		dead := claim("dead", now.Add(-time.Hour)) // its lease expired long ago
		claim("alive", now)
		done := claim("done", now.Add(-time.Hour))
		mustFinish(t, b.Store, finishParams(done, store.SlotCompleted, now.Add(-time.Hour)))
		got, err := b.Open(t).SlotListInterrupted(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Job != "dead" || !got[0].Slot.Equal(dead.Slot.Slot) || got[0].Status != store.SlotRunning {
			t.Fatalf("interrupted slots = %+v; want only the dead run's", got)
		}
		// Claimed again, it is no longer interrupted.
		p := claimParams(dead.Slot.Slot, "b", now)
		p.Job, p.LeaseName = "dead", "job:dead"
		if r := mustClaim(t, b.Store, p); r.Slot.Attempts != 2 {
			t.Fatalf("resumed as attempt %d, want 2", r.Slot.Attempts)
		}
		if got, err := b.Store.SlotListInterrupted(ctx(t)); err != nil || len(got) != 0 {
			t.Fatalf("after the resume: %+v, %v", got, err)
		}
	}},
	{name: "AbandonExhausted", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		claim := func(job string, at time.Time) store.SlotClaimResult {
			p := claimParams(at.Add(-time.Second), "a", at)
			p.Job, p.LeaseName, p.MaxAttempts = job, "job:"+job, 1
			return mustClaim(t, b.Store, p)
		}
		dead := claim("dead", now.Add(-time.Hour)) // its lease expired long ago
		alive := claim("alive", now)
		recent := claim("recent", now.Add(-ttl-time.Second)) // its lease expired a second ago
		// A later slot of "taken" took its lease a second ago; the earlier
		// claim's generation expired before that.
		taken := claim("taken", now.Add(-time.Hour))
		later := claimParams(now.Add(-2*time.Second), "b", now.Add(-time.Second))
		later.Job, later.LeaseName, later.MaxAttempts = "taken", "job:taken", 1
		mustClaim(t, b.Store, later)
		abandon := func(s store.Store, r store.SlotClaimResult, maxAttempts int, gen int64, grace time.Duration) store.SlotFinishResult {
			t.Helper()
			res, err := s.SlotAbandon(ctx(t), store.SlotAbandonParams{
				Job: r.Slot.Job, Slot: r.Slot.Slot, LeaseName: r.Lease.Name, Owner: r.Lease.Owner, Generation: gen,
				MaxAttempts: maxAttempts, Grace: grace, Error: "interrupted on its last attempt", Logs: []string{"abandoned by b"}, Now: now,
			})
			if err != nil {
				t.Fatalf("SlotAbandon of %s: %v", r.Slot.Job, err)
			}
			return res
		}
		runs := func(job string) []store.Run {
			t.Helper()
			rs, err := b.Store.RunList(ctx(t), store.RunListParams{Job: job})
			if err != nil {
				t.Fatal(err)
			}
			return rs
		}
		for _, tc := range []struct {
			name        string
			r           store.SlotClaimResult
			maxAttempts int
			gen         int64
		}{
			{"an attempt left", dead, 2, dead.Lease.Generation},
			{"its lease alive", alive, 1, alive.Lease.Generation},
			{"another generation's claim", dead, 1, dead.Lease.Generation + 1},
			{"expired within the grace", recent, 1, recent.Lease.Generation},
			{"taken over within the grace", taken, 1, taken.Lease.Generation},
		} {
			if res := abandon(b.Store, tc.r, tc.maxAttempts, tc.gen, time.Minute); res.SlotUpdated || res.Run.ID != 0 {
				t.Errorf("%s: abandoned %+v; want the slot left running", tc.name, res)
			}
			if sl, _ := b.Store.SlotGet(ctx(t), tc.r.Slot.Job, tc.r.Slot.Slot); sl.Status != store.SlotRunning {
				t.Errorf("%s: slot %+v, want still running", tc.name, sl)
			}
			if rs := runs(tc.r.Slot.Job); len(rs) != 0 {
				t.Errorf("%s: wrote run rows %+v", tc.name, rs)
			}
		}

		// Past the grace, both are ended.
		for _, r := range []store.SlotClaimResult{recent, taken} {
			if res := abandon(b.Store, r, 1, r.Lease.Generation, 0); !res.SlotUpdated {
				t.Errorf("%s with no grace: %+v; want it abandoned", r.Slot.Job, res)
			}
		}
		res := abandon(b.Store, dead, 1, dead.Lease.Generation, time.Minute)
		// The dead holding's interrupted row: its end the lease's expiry,
		// its error saying the lease expired.
		want := store.Run{
			ID: res.Run.ID, Job: "dead", Slot: dead.Slot.Slot, Owner: "a", Generation: dead.Lease.Generation, LeaseName: "job:dead", Attempt: 1,
			StartedAt: dead.Slot.StartedAt, FinishedAt: dead.Lease.ExpiresAt, Reason: store.ReasonInterrupted,
			Error: "interrupted on its last attempt (" + store.DeadLeaseExpired + ")", Logs: []string{"abandoned by b"},
		}
		if !res.SlotUpdated || res.LeaseReleased || !res.Buffered.IsZero() {
			t.Fatalf("abandon = %+v; want the slot updated, nothing released or buffered", res)
		}
		if diff := cmp.Diff(want, res.Run); diff != "" {
			t.Fatalf("abandoned run row (-want +got):\n%s", diff)
		}
		sl, err := b.Store.SlotGet(ctx(t), "dead", dead.Slot.Slot)
		if err != nil || sl.Status != store.SlotFailed || !sl.FinishedAt.Equal(now) || sl.Attempts != 1 {
			t.Fatalf("abandoned slot = %+v, %v; want failed at attempt 1, finished now", sl, err)
		}
		if got, err := b.Store.SlotListInterrupted(ctx(t)); err != nil || len(got) != 0 {
			t.Fatalf("interrupted after the abandon: %+v, %v; want none", got, err)
		}
		// Once only: another replica's abandon finds nothing to end, and the
		// dead owner's late finish does not undo it; its own account of the
		// run replaces the row that stood in for it, not a success.
		if again := abandon(b.Open(t), dead, 1, dead.Lease.Generation, 0); again.SlotUpdated {
			t.Fatalf("a second abandon = %+v; want nothing", again)
		}
		if late := mustFinish(t, b.Store, finishParams(dead, store.SlotCompleted, now)); late.SlotUpdated || late.Run.ID != res.Run.ID ||
			late.Run.Success || late.Run.Reason != "" || late.Run.Logs[0] != "done" {
			t.Fatalf("the dead owner's late finish = %+v; want the slot left failed and its own row, not a success, in the abandon's", late)
		}
		if sl, _ := b.Store.SlotGet(ctx(t), "dead", dead.Slot.Slot); sl.Status != store.SlotFailed {
			t.Fatalf("after the late finish the slot is %s, want failed", sl.Status)
		}
		if rs := runs("dead"); len(rs) != 1 || rs[0].ID != res.Run.ID || rs[0].Success {
			t.Fatalf("run rows = %+v; want one, not a success", rs)
		}
		// A later holder took the lease of "taken": that is how it was found
		// dead, at now; and a holding that has its run row already keeps it.
		if rs := runs("taken"); len(rs) != 1 || rs[0].Reason != store.ReasonInterrupted || rs[0].LeaseName != "job:taken" ||
			rs[0].Error != "interrupted on its last attempt ("+store.DeadLeaseTaken+")" || !rs[0].FinishedAt.Equal(now) {
			t.Fatalf("taken's run rows = %+v; want its interrupted row, found taken over, ended now", rs)
		}
		kept := claim("kept", now.Add(-time.Hour))
		if _, err := b.Store.RunInsert(ctx(t), store.Run{Job: "kept", Slot: kept.Slot.Slot, Owner: "a", LeaseName: "job:kept",
			Generation: kept.Lease.Generation, Attempt: 1, Error: "its own end, recorded but not on its slot"}); err != nil {
			t.Fatal(err)
		}
		if res := abandon(b.Store, kept, 1, kept.Lease.Generation, 0); !res.SlotUpdated || res.Run.Error != "its own end, recorded but not on its slot" {
			t.Fatalf("abandon of a holding with a run row = %+v; want the slot ended and that row kept", res)
		}
		if rs := runs("kept"); len(rs) != 1 {
			t.Fatalf("kept's run rows = %+v; want one", rs)
		}

		for name, p := range map[string]store.SlotAbandonParams{
			"no slot":          {Job: "dead", LeaseName: "job:dead", Owner: "a", Generation: 1, MaxAttempts: 1},
			"no max attempts":  {Job: "dead", Slot: now, LeaseName: "job:dead", Owner: "a", Generation: 1},
			"no owner":         {Job: "dead", Slot: now, LeaseName: "job:dead", Generation: 1, MaxAttempts: 1},
			"a negative grace": {Job: "dead", Slot: now, LeaseName: "job:dead", Owner: "a", Generation: 1, MaxAttempts: 1, Grace: -time.Second},
		} {
			if _, err := b.Store.SlotAbandon(ctx(t), p); !errors.Is(err, store.ErrInvalidArgument) {
				t.Errorf("SlotAbandon with %s: %v, want ErrInvalidArgument", name, err)
			}
		}
	}},
	{name: "GetMissing", fn: func(t *testing.T, b Bundle) {
		if _, err := b.Store.SlotGet(ctx(t), "report", time.Unix(0, 0)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("SlotGet of a missing slot: %v, want ErrNotFound", err)
		}
	}},
	{name: "SlotsIndependentPerJob", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		slot := now.Add(-time.Second)
		mustClaim(t, b.Store, claimParams(slot, "a", now))
		p := claimParams(slot, "a", now)
		p.Job, p.LeaseName = "other", "job:other"
		if r := mustClaim(t, b.Store, p); r.Slot.Generation != 1 {
			t.Fatalf("another job's lease started at generation %d", r.Slot.Generation)
		}
	}},
}
