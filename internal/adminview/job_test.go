package adminview_test

import (
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/adminview"
	"github.com/cronfence/cronfence/store"
)

// A job's view: its zone defaults to UTC, an override beats the
// declaration, and a job that will not run shows no next slot.
func TestJobOf(t *testing.T) {
	next := time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)
	now := next.Add(-time.Minute)
	off, on := false, true
	for _, tc := range []struct {
		name     string
		d        adminview.Declared
		st       *store.JobState
		tz       string
		enabled  bool
		wantNext bool
	}{
		{"declared enabled", adminview.Declared{Name: "a", Next: next}, nil, "UTC", true, true},
		{"declared disabled", adminview.Declared{Name: "a", TimeZone: "Europe/Lisbon", Disabled: true, Next: next}, nil, "Europe/Lisbon", false, false},
		{"paused", adminview.Declared{Name: "a", Next: next}, &store.JobState{Job: "a", EnabledOverride: &off, OverrideBy: "ops"}, "UTC", false, false},
		{"resumed", adminview.Declared{Name: "a", Disabled: true, Next: next}, &store.JobState{Job: "a", EnabledOverride: &on}, "UTC", true, true},
		{"override removed", adminview.Declared{Name: "a", Disabled: true, Next: next}, &store.JobState{Job: "a", OverrideBy: "ops"}, "UTC", false, false},
		{"no next slot known", adminview.Declared{Name: "a"}, nil, "UTC", true, false},
		{"paused until later", adminview.Declared{Name: "a", Next: next}, &store.JobState{Job: "a", EnabledOverride: &off, Until: now.Add(time.Hour)}, "UTC", false, false},
		{"paused until a time passed", adminview.Declared{Name: "a", Next: next}, &store.JobState{Job: "a", EnabledOverride: &off, Until: now}, "UTC", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := adminview.JobOf(tc.d, tc.st, now)
			if v.TimeZone != tc.tz || v.Enabled != tc.enabled || v.DeclaredEnabled != !tc.d.Disabled {
				t.Fatalf("zone %q enabled %t declared %t, want %q %t %t", v.TimeZone, v.Enabled, v.DeclaredEnabled, tc.tz, tc.enabled, !tc.d.Disabled)
			}
			if (v.Next != nil) != tc.wantNext || (v.Next != nil && *v.Next != "2026-03-29T01:30:00Z") {
				t.Fatalf("next %v, want it: %t", v.Next, tc.wantNext)
			}
			if (v.Override != nil) != (tc.st != nil) {
				t.Fatalf("override %+v for state %+v", v.Override, tc.st)
			}
			if v.Override != nil && (v.Override.Until != nil) != !tc.st.Until.IsZero() {
				t.Fatalf("override until %v for state until %s", v.Override.Until, tc.st.Until)
			}
		})
	}
}
