package absence_test

import (
	"testing"

	"github.com/cronfence/cronfence/internal/absence"
	"github.com/cronfence/cronfence/store"
)

// An alert's fingerprint changes with what it reports, not with its
// measures: an acknowledged alert that only grows stays acknowledged; one
// that reports another problem does not.
func TestFingerprint(t *testing.T) {
	t.Parallel()
	lease := map[string]string{"lease": "job:sync", "owner": "a", "generation": "7", "reason": "not_renewed", "held": "1m", "renewed_at": "t1"}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "" {
				delete(out, kv[i])
			} else {
				out[kv[i]] = kv[i+1]
			}
		}
		return out
	}
	drift := map[string]string{"a": `hash=1 schedule="@every 1m"`, "b": `hash=2 schedule="@every 2m"`, "differences": "schedule"}
	for _, tc := range []struct {
		name   string
		kind   store.AlertKind
		before map[string]string
		after  map[string]string
		same   bool
	}{
		{"a stuck lease held longer", store.AlertLeaseStuck, lease, with(lease, "held", "5m", "renewed_at", "t2"), true},
		{"a stuck lease taken by another owner", store.AlertLeaseStuck, lease, with(lease, "owner", "b", "generation", "8"), false},
		{"a stuck lease, now held too long", store.AlertLeaseStuck, lease, with(lease, "reason", "held_too_long", "limit", "1h"), false},
		{"more skips", store.AlertSkipStreak, map[string]string{"count": "4", "reason": "already_executing"},
			map[string]string{"count": "9+", "reason": "already_executing"}, true},
		{"skips for another reason", store.AlertSkipStreak, map[string]string{"count": "4", "reason": "already_executing"},
			map[string]string{"count": "5", "reason": "lease_busy"}, false},
		{"another slot missed, failed or missing", store.AlertDeadlineMissed, map[string]string{"slot": "s1", "status": "failed"},
			map[string]string{"slot": "s2", "status": "missing"}, true},
		{"more failed slots, another error", store.AlertFailing, map[string]string{"count": "3", "last_error": "exit status 3"},
			map[string]string{"count": "4", "last_error": "exit status 1"}, true},
		{"a slower run", store.AlertSlowRun, map[string]string{"duration": "40s"}, map[string]string{"duration": "50s"}, true},
		{"an orphan's dead replicas", store.AlertOrphanJob, map[string]string{"replicas": "a"}, map[string]string{"replicas": "a, b"}, true},
		{"a clock further ahead", store.AlertClockOffset, map[string]string{"offset": "3m0s"}, map[string]string{"offset": "5m0s"}, true},
		{"a clock now behind", store.AlertClockOffset, map[string]string{"offset": "3m0s"}, map[string]string{"offset": "-3m0s"}, false},
		{"drifting replicas restarted with their settings", store.AlertConfigDrift, drift,
			map[string]string{"c": drift["a"], "d": drift["b"], "e": drift["b"], "differences": "schedule"}, true},
		{"a third version rolled out", store.AlertConfigDrift, drift, with(drift, "c", `hash=3 schedule="@every 3m"`), false},
		{"the same deposed writer, a later slot", store.AlertDeposedWriter, map[string]string{"writer": "w", "generation": "4", "slot": "s1"},
			map[string]string{"writer": "w", "generation": "4", "slot": "s2"}, true},
		{"another deposed writer", store.AlertDeposedWriter, map[string]string{"writer": "w", "generation": "4"},
			map[string]string{"writer": "v", "generation": "5"}, false},
		{"a kind these checks do not know, same details", "custom_check", map[string]string{"k": "v"}, map[string]string{"k": "v"}, true},
		{"a kind these checks do not know, any detail changed", "custom_check", map[string]string{"k": "v"}, map[string]string{"k": "w"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before, after := absence.Fingerprint(tc.kind, tc.before), absence.Fingerprint(tc.kind, tc.after)
			if (before == after) != tc.same {
				t.Errorf("fingerprints %q and %q: same = %v, want %v", before, after, before == after, tc.same)
			}
			if len(after) > store.MaxNameLength {
				t.Errorf("fingerprint %q longer than a store accepts", after)
			}
		})
	}
	if fp := absence.Fingerprint(store.AlertFailing, map[string]string{"count": "3"}); fp != "" {
		t.Errorf("a failing alert's fingerprint is %q, want empty: only its resolution ends an acknowledgement", fp)
	}
}
