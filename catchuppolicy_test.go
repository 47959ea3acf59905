package cronfence

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// Catch-up settings that cannot mean what they say are refused, naming
// what is wrong; left out, they mean what the docs say.
func TestCatchUpSettings(t *testing.T) {
	base := Job{Name: "j", Schedule: "* * * * *", Handler: func(context.Context, *Run) error { return nil }}
	for _, tc := range []struct {
		name    string
		set     func(j *Job)
		wantErr string
		policy  CatchUp
		max     int
	}{
		{"nothing set: none", func(j *Job) {}, "", CatchUpNone, 0},
		{"a window: latest", func(j *Job) { j.CatchUpWindow = time.Hour }, "", CatchUpLatest, 0},
		{"all: 100 slots back", func(j *Job) { j.CatchUp, j.CatchUpWindow = CatchUpAll, time.Hour }, "", CatchUpAll, DefaultMaxCatchUp},
		{"all, max set", func(j *Job) { j.CatchUp, j.CatchUpWindow, j.MaxCatchUp = CatchUpAll, time.Hour, 7 }, "", CatchUpAll, 7},
		{"unknown policy", func(j *Job) { j.CatchUp, j.CatchUpWindow = "every", time.Hour }, `CatchUp must be "none", "latest" or "all", got "every"`, "", 0},
		{"all without a window", func(j *Job) { j.CatchUp = CatchUpAll }, `CatchUp "all" needs a CatchUpWindow`, "", 0},
		{"latest without a window", func(j *Job) { j.CatchUp = CatchUpLatest }, `CatchUp "latest" needs a CatchUpWindow`, "", 0},
		{"none with a window", func(j *Job) { j.CatchUp, j.CatchUpWindow = CatchUpNone, time.Hour }, `CatchUp "none" with a CatchUpWindow of 1h0m0s`, "", 0},
		{"negative window", func(j *Job) { j.CatchUpWindow = -time.Hour }, "CatchUpWindow must not be negative", "", 0},
		{"max with latest", func(j *Job) { j.CatchUpWindow, j.MaxCatchUp = time.Hour, 5 }, `MaxCatchUp applies only to CatchUp "all", not "latest"`, "", 0},
		{"negative max", func(j *Job) { j.CatchUp, j.CatchUpWindow, j.MaxCatchUp = CatchUpAll, time.Hour, -1 }, "MaxCatchUp must not be negative", "", 0},
		{"max over the limit", func(j *Job) { j.CatchUp, j.CatchUpWindow, j.MaxCatchUp = CatchUpAll, time.Hour, MaxCatchUpLimit+1 }, "MaxCatchUp must be at most 10000, got 10001", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := base
			tc.set(&j)
			r, err := j.prepare()
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, store.ErrInvalidArgument) {
					t.Fatalf("error %v, want an invalid job saying %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case r.CatchUp != tc.policy || r.MaxCatchUp != tc.max:
				t.Fatalf("CatchUp %q, MaxCatchUp %d; want %q, %d", r.CatchUp, r.MaxCatchUp, tc.policy, tc.max)
			}
		})
	}
}

// Catch-up of policy all runs every slot of its window without a claim,
// so a window that pruning reaches would run a pruned slot again: Register
// refuses it, naming both. Policy latest runs only the latest slot, whose
// claim is never pruned.
func TestCatchUpAllWindowMustBeShorterThanTheRetention(t *testing.T) {
	s, err := New(Config{Store: intercept(nil), Owner: "a", Retention: 24 * time.Hour}) // New and Register do no I/O
	if err != nil {
		t.Fatal(err)
	}
	noop := func(context.Context, *Run) error { return nil }
	err = s.Register(Job{Name: "all", Schedule: "@hourly", Handler: noop, CatchUp: CatchUpAll, CatchUpWindow: 24 * time.Hour})
	if want := `job "all": CatchUpWindow 24h0m0s must be shorter than Config.Retention 24h0m0s with CatchUp "all"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Register = %v, want an error saying %q", err, want)
	}
	if err := s.Register(Job{Name: "latest", Schedule: "@hourly", Handler: noop, CatchUpWindow: 48 * time.Hour}); err != nil {
		t.Fatalf("a latest window past the retention: %v", err)
	}
}
