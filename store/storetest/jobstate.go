package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

func ptr[T any](v T) *T { return &v }

var jobStateTests = []namedTest{
	{name: "OverrideRecordsWhoAndWhen", fn: func(t *testing.T, b Bundle) {
		before := dbNow(t, b.Store)
		js, err := b.Store.JobStateSet(ctx(t), store.JobStateSetParams{Job: "report", Enabled: ptr(false), By: "ana", Note: "vendor outage"})
		if err != nil {
			t.Fatal(err)
		}
		if js.EnabledOverride == nil || *js.EnabledOverride || js.OverrideBy != "ana" || js.Note != "vendor outage" || js.OverrideAt.Before(before) {
			t.Fatalf("JobStateSet = %+v", js)
		}
		// Another replica, or this one after a restart, sees the same.
		states, err := b.Open(t).JobStateList(ctx(t))
		if err != nil || len(states) != 1 || *states[0].EnabledOverride || states[0].OverrideBy != "ana" {
			t.Fatalf("JobStateList = %+v, %v", states, err)
		}
		js, err = b.Store.JobStateSet(ctx(t), store.JobStateSetParams{Job: "report", Enabled: nil, By: "bruno"})
		if err != nil || js.EnabledOverride != nil || js.OverrideBy != "bruno" || js.Note != "" {
			t.Fatalf("clearing the override = %+v, %v", js, err)
		}
	}},
	{name: "OverrideBeatsDeclaration", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		declaredOff := func(slot time.Time) store.SlotClaimParams {
			p := claimParams(slot, "a", now)
			p.DeclaredDisabled = true
			return p
		}
		wantRefusal(t, b.Store, declaredOff(now.Add(-3*time.Second)), store.ClaimPaused)
		if _, err := b.Store.JobStateSet(ctx(t), store.JobStateSetParams{Job: "report", Enabled: ptr(true), By: "ana"}); err != nil {
			t.Fatal(err)
		}
		r := mustClaim(t, b.Store, declaredOff(now.Add(-2*time.Second)))
		mustFinish(t, b.Store, finishParams(r, store.SlotCompleted, now))
		// nil restores the declared value.
		if _, err := b.Store.JobStateSet(ctx(t), store.JobStateSetParams{Job: "report", By: "ana"}); err != nil {
			t.Fatal(err)
		}
		wantRefusal(t, b.Store, declaredOff(now.Add(-time.Second)), store.ClaimPaused)
	}},
	{name: "PauseUntilEndsByItself", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		until := now.Add(-time.Minute)
		js, err := b.Store.JobStateSet(ctx(t), store.JobStateSetParams{Job: "report", Enabled: ptr(false), By: "ana", Until: until})
		if err != nil || !js.Until.Equal(until) {
			t.Fatalf("JobStateSet until %s = %+v, %v", until, js, err)
		}
		if states, err := b.Open(t).JobStateList(ctx(t)); err != nil || len(states) != 1 || !states[0].Until.Equal(until) {
			t.Fatalf("JobStateList = %+v, %v; want the override with its end", states, err)
		}
		// A slot before the end is paused (settled skipped, once); one at
		// the end and one after run, with no write between: the end is
		// judged by each claim, on every replica.
		if r := wantRefusal(t, b.Store, claimParams(until.Add(-time.Second), "a", now), store.ClaimPaused); r.Recorded != store.SlotSkipped {
			t.Fatalf("the slot before the end: recorded %q, want skipped", r.Recorded)
		}
		at := mustClaim(t, b.Open(t), claimParams(until, "b", now))
		mustFinish(t, b.Store, finishParams(at, store.SlotCompleted, now))
		mustClaim(t, b.Store, claimParams(until.Add(time.Second), "a", now.Add(time.Second)))
		// Set again without an end, the pause holds for good; an end
		// without an override is refused.
		if js, err := b.Store.JobStateSet(ctx(t), store.JobStateSetParams{Job: "report", Enabled: ptr(false), By: "ana"}); err != nil || !js.Until.IsZero() {
			t.Fatalf("JobStateSet without an end = %+v, %v; want no end", js, err)
		}
		wantRefusal(t, b.Store, claimParams(now.Add(time.Second), "a", now.Add(2*time.Second)), store.ClaimPaused)
		_, err = b.Store.JobStateSet(ctx(t), store.JobStateSetParams{Job: "report", By: "ana", Until: now})
		wantErrIs(t, "an end without an override", err, store.ErrInvalidArgument)
	}},
	{name: "PauseAcknowledgedBeforeTheSlotStopsAWaitingClaim", fn: func(t *testing.T, b Bundle) {
		// A claim sent ahead of its slot, asking to wait (the scheduler's
		// timers send theirs 50 ms early), must honour a pause that was
		// acknowledged before the slot came: either the claim is refused
		// paused, or the pause was not acknowledged until the claim had
		// won, at or after the slot by the database clock (the claim came
		// first). Two ways in: with the job's lease free, and with it
		// held by a run that ends during the wait.
		t.Run("LeaseFree", func(t *testing.T) { setDuringWait(t, b, "report", false, nil) })
		t.Run("LeaseHeldByARunEndingInTheWait", func(t *testing.T) {
			now := dbNow(t, b.Store)
			holder := mustClaim(t, b.Store, store.SlotClaimParams{Job: "mail", Slot: now.Add(-time.Second), LeaseName: "job:mail",
				Owner: "x", TTL: ttl, MaxAttempts: 3})
			setDuringWait(t, b, "mail", false, &holder)
		})
	}},
	{name: "ResumeAcknowledgedBeforeTheSlotLetsAWaitingClaimRun", fn: func(t *testing.T, b Bundle) {
		// The same for a resume: a claim sent ahead of its slot while the
		// job is paused must run the slot if the resume was acknowledged
		// before the slot came: either it is claimed, or the resume was
		// not acknowledged until the slot was due (the claim, refused
		// paused, came first and settled the slot skipped).
		if _, err := b.Store.JobStateSet(ctx(t), store.JobStateSetParams{Job: "report", Enabled: ptr(false), By: "ana"}); err != nil {
			t.Fatal(err)
		}
		setDuringWait(t, b, "report", true, nil)
	}},
	{name: "BadInput", fn: func(t *testing.T, b Bundle) {
		for _, p := range []store.JobStateSetParams{
			{Job: "", By: "ana"},
			{Job: "report", By: ""},
			{Job: "report", By: "ana", Note: string(make([]byte, store.MaxNoteLength+1))},
			{Job: "report", By: "ana", Note: "nul\x00"},
			{Job: "report", By: "ana", Note: "bad utf-8 \xff"},
		} {
			if _, err := b.Store.JobStateSet(ctx(t), p); !errors.Is(err, store.ErrInvalidArgument) {
				t.Errorf("JobStateSet(%+v) = %v, want ErrInvalidArgument", p, err)
			}
		}
		if states, err := b.Store.JobStateList(ctx(t)); err != nil || len(states) != 0 {
			t.Fatalf("bad input left states %+v (%v)", states, err)
		}
	}},
}

// setDuringWait sends a claim of job's slot 80 ms ahead, asking to wait,
// and pauses (enabled false) or resumes the job while the claim waits, or
// as soon as it answers if it answers before its slot (a store that
// commits a claim ahead, store.SlotClaimResult.Wait): the claim must then
// have read the state the job had at its slot. holder, when not nil, is a
// run holding the job's lease, ended once the state is set.
func setDuringWait(t *testing.T, b Bundle, job string, enabled bool, holder *store.SlotClaimResult) {
	claimer := b.Open(t)
	// A claim of another job first, so that the one measured goes out at
	// once (connected, its statements prepared).
	now := dbNow(t, b.Store)
	mustClaim(t, claimer, store.SlotClaimParams{Job: job + "-warm", Slot: now.Add(-time.Second), LeaseName: "job:" + job + "-warm",
		Owner: "a", TTL: ttl, MaxAttempts: 3, WaitDue: true})
	now = dbNow(t, b.Store)
	p := store.SlotClaimParams{Job: job, Slot: now.Add(80 * time.Millisecond), LeaseName: "job:" + job, Owner: "a",
		TTL: ttl, MaxAttempts: 3, WaitDue: true}
	type answer struct {
		r   store.SlotClaimResult
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		r, err := claimer.SlotClaim(ctx(t), p)
		answered <- answer{r, err}
	}()
	var a *answer
	for a == nil && dbNow(t, b.Store).Before(now.Add(30*time.Millisecond)) {
		select {
		case got := <-answered:
			a = &got
		default:
		}
	}
	if _, err := b.Store.JobStateSet(ctx(t), store.JobStateSetParams{Job: job, Enabled: ptr(enabled), By: "ana"}); err != nil {
		t.Fatal(err)
	}
	acked := dbNow(t, b.Store)
	if holder != nil {
		mustFinish(t, b.Store, finishParams(*holder, store.SlotCompleted, acked))
	}
	if a == nil {
		got := <-answered
		a = &got
	}
	if a.err != nil {
		t.Fatal(a.err)
	}
	switch {
	case !a.r.Claimed && a.r.Refusal != store.ClaimPaused:
		t.Fatalf("the claim was refused %q, want claimed or paused", a.r.Refusal)
	case !enabled && a.r.Claimed && acked.Before(p.Slot):
		t.Fatalf("the slot due at %s was claimed although its job's pause was acknowledged at %s by the database clock",
			p.Slot.Format(time.RFC3339Nano), acked.Format(time.RFC3339Nano))
	case enabled && !a.r.Claimed && acked.Before(p.Slot):
		t.Fatalf("the slot due at %s was refused paused although its job's resume was acknowledged at %s by the database clock",
			p.Slot.Format(time.RFC3339Nano), acked.Format(time.RFC3339Nano))
	}
}
