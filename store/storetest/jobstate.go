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
