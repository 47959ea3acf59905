package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cronfence/cronfence"
)

// The history: defaults must stay the cronfence package's, so a file
// without the section prunes as a zero cronfence.Config does.
func TestHistoryDefaultsMatchCronfence(t *testing.T) {
	t.Parallel()
	if DefaultRetention != cronfence.DefaultRetention || DefaultPruneEvery != cronfence.DefaultPruneEvery {
		t.Fatal("history: defaults differ from the cronfence package's")
	}
	if MinPruneEvery != cronfence.DefaultMaxSleep {
		t.Fatalf("MinPruneEvery = %s, want the scheduler's wake-up, %s", MinPruneEvery, cronfence.DefaultMaxSleep)
	}
	want := History{Retention: 7 * 24 * time.Hour, PruneEvery: time.Hour}
	for _, src := range []string{webhookJobs, "history:\n" + webhookJobs} {
		if diff := cmp.Diff(want, mustParse(t, src).History); diff != "" {
			t.Fatalf("%q (-want +got):\n%s", src, diff)
		}
	}
	want.Line = 1
	if diff := cmp.Diff(want, mustParse(t, "history: {}\n"+webhookJobs).History); diff != "" {
		t.Fatalf("history: {} (-want +got):\n%s", diff)
	}
}

func TestHistorySection(t *testing.T) {
	t.Parallel()
	const day = 24 * time.Hour
	for _, tc := range []struct {
		name, src string
		want      History
	}{
		{"every field", "history:\n  retention: 720h\n  prune_every: 15m\n", History{Retention: 30 * day, PruneEvery: 15 * time.Minute, Line: 1}},
		{"retention only", "history:\n  retention: 48h\n", History{Retention: 2 * day, PruneEvery: time.Hour, Line: 1}},
		{"prune_every only", "history:\n  prune_every: 1s\n", History{Retention: 7 * day, PruneEvery: time.Second, Line: 1}},
		{"off", "history:\n  retention: off\n", History{Retention: Off, PruneEvery: time.Hour, Line: 1}},
		{"negative is off", "history:\n  retention: -1h\n", History{Retention: Off, PruneEvery: time.Hour, Line: 1}},
		{"variables", "jobs: []\nhistory:\n  retention: ${KEEP:-720h}\n  prune_every: ${TTL}\n",
			History{Retention: 30 * day, PruneEvery: 2 * time.Minute, Line: 2}},
		{"off from a variable", "history:\n  retention: ${KEEP:-off}\n", History{Retention: Off, PruneEvery: time.Hour, Line: 1}},
		// Longer than the longest bound (replica_stale 30s) by a nanosecond.
		{"just longer than replica_stale", "history:\n  retention: 30.000000001s\n",
			History{Retention: 30*time.Second + 1, PruneEvery: time.Hour, Line: 1}},
		{"just longer than a timeout", "history:\n  retention: 2h\n" + job("    shell: x\n    schedule: '@hourly'\n    timeout: 119m\n    deadline: 1h\n"),
			History{Retention: 2 * time.Hour, PruneEvery: time.Hour, Line: 1}},
		{"off ignores the bounds", "history:\n  retention: off\n" + job("    shell: x\n    schedule: '@hourly'\n    timeout: 1000h\n"),
			History{Retention: Off, PruneEvery: time.Hour, Line: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, mustParse(t, tc.src).History); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestHistoryErrors(t *testing.T) {
	t.Parallel()
	const f = "/etc/cronfence/cronfence.yaml:"
	const sched = "    shell: x\n    schedule: '@hourly'\n"
	for _, tc := range []struct{ name, src, want string }{
		// retention
		{"retention zero", "history:\n  retention: 0s\n", f + "2: history.retention: must not be zero; leave it out for 168h0m0s, or write off to keep all history"},
		{"retention in days", "history:\n  retention: 7d\n", f + `2: history.retention: "7d" is not a duration; write e.g. "720h" for 30 days, or off to keep all history`},
		{"retention bare number", "history:\n  retention: 168\n", f + `2: history.retention: 168 is a bare number; write a duration with its unit, e.g. "90s" or "1h30m"`},
		{"retention boolean", "history:\n  retention: false\n", f + "2: history.retention: must be a string, got the boolean false; quote it"},
		{"retention list", "history:\n  retention: [1h]\n", f + "2: history.retention: must be a single value, got a list"},
		{"retention unset variable", "history:\n  retention: ${NOPE}\n", f + "2: history.retention: environment variable NOPE is not set (write ${NOPE:-default} for a default)"},
		// prune_every
		{"prune_every zero", "history:\n  prune_every: 0s\n", f + "2: history.prune_every: must not be zero; leave it out for 1h0m0s"},
		{"prune_every negative", "history:\n  prune_every: -1h\n", f + `2: history.prune_every: "-1h" must not be negative`},
		{"prune_every off", "history:\n  prune_every: off\n", f + "2: history.prune_every: cannot be off; write retention: off to stop pruning"},
		{"prune_every too short", "history:\n  prune_every: 500ms\n", f + `2: history.prune_every: "500ms" must be at least 1s: the scheduler looks for work about once a second`},
		{"prune_every bare number", "history:\n  prune_every: 60\n", f + `2: history.prune_every: 60 is a bare number; write a duration with its unit, e.g. "90s" or "1h30m"`},
		{"prune_every not a duration", "history:\n  prune_every: hourly\n", f + `2: history.prune_every: "hourly" is not a duration; write e.g. "90s" or "1h30m"`},
		{"prune_every with retention off", "history:\n  retention: off\n  prune_every: 1m\n",
			f + "3: history.prune_every: has no effect: retention is off (line 2), so nothing is pruned; leave prune_every out"},
		// against what pruning must leave alone
		{"retention not longer than a timeout", "history:\n  retention: 2h\n" + job(sched+"    timeout: 2h\n"),
			f + "2: history.retention: 2h0m0s must be longer than jobs[0].timeout (2h0m0s, line 7): a run may last its timeout, and pruning would delete the slot it is running once a newer one exists"},
		{"retention shorter than a deadline", "history:\n  retention: 1h\n" + job(sched+"    deadline: 3h\n    timeout: 2h\n"),
			f + "2: history.retention: 1h0m0s must be longer than jobs[0].deadline (3h0m0s, line 7): the deadline check reads a slot once its deadline has passed, and would find it pruned and raise deadline_missed for a slot that ran"},
		{"retention shorter than a default deadline", "defaults:\n  deadline: 2h\nhistory:\n  retention: 1h\n" + job(sched),
			f + "4: history.retention: 1h0m0s must be longer than defaults.deadline (2h0m0s, line 2): the deadline check reads a slot once its deadline has passed, and would find it pruned and raise deadline_missed for a slot that ran"},
		{"retention not longer than replica_stale", "history:\n  retention: 30s\n",
			f + "2: history.retention: 30s must be longer than monitor.replica_stale (30s, the default): pruning would delete the registry rows of replicas still counted live"},
		{"retention shorter than a set replica_stale", "monitor:\n  replica_stale: 5m\nhistory:\n  retention: 1m\n",
			f + "4: history.retention: 1m0s must be longer than monitor.replica_stale (5m0s, line 2): pruning would delete the registry rows of replicas still counted live"},
		{"retention shorter than a derived replica_stale", "monitor:\n  heartbeat_every: 1m\nhistory:\n  retention: 2m\n",
			f + "4: history.retention: 2m0s must be longer than monitor.replica_stale (3m0s, 3 × heartbeat_every, line 2): pruning would delete the registry rows of replicas still counted live"},
		{"default retention, derived replica_stale too long", "monitor:\n  heartbeat_every: 56h\n",
			f + "2: monitor.heartbeat_every: makes monitor.replica_stale 168h0m0s (3 × heartbeat_every), not shorter than the history retention (168h0m0s by default): pruning would delete the registry rows of replicas still counted live; shorten it, or set history.retention longer"},
		{"default retention, timeout too long", job(sched + "    timeout: 200h\n"),
			f + "5: jobs[0].timeout: 200h0m0s is not shorter than the history retention (168h0m0s by default): a run may last its timeout, and pruning would delete the slot it is running once a newer one exists; shorten it, or set history.retention longer"},
		{"default retention, replica_stale too long", "monitor:\n  replica_stale: 168h\n",
			f + "2: monitor.replica_stale: 168h0m0s is not shorter than the history retention (168h0m0s by default): pruning would delete the registry rows of replicas still counted live; shorten it, or set history.retention longer"},
		{"invalid retention, no bound problem", "history:\n  retention: 7d\n" + job(sched+"    timeout: 200h\n"),
			f + `2: history.retention: "7d" is not a duration; write e.g. "720h" for 30 days, or off to keep all history`},
		// the section itself
		{"unknown field", "history:\n  keep: 1h\n", f + "2: history.keep: unknown field; expected one of retention, prune_every"},
		{"repeated field", "history:\n  retention: 1h\n  retention: 2h\n", f + "3: history.retention: repeated (first on line 2)"},
		{"not a mapping", "history: 168h\n", f + `1: history: must be a mapping (key: value), got "168h"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := tc.src
			if !strings.HasPrefix(src, "jobs:") && !strings.Contains(src, "\njobs:") {
				src += webhookJobs
			}
			_, err := parseTest(t, src)
			if err == nil || err.Error() != tc.want {
				t.Errorf("%q:\n got %v\nwant %s", src, err, tc.want)
			}
		})
	}
}

// Only the longest bound is reported: one problem, not one a job.
func TestHistoryReportsTheLongestBound(t *testing.T) {
	t.Parallel()
	_, err := parseTest(t, `
history:
  retention: 1h
defaults:
  timeout: 2h
jobs:
  - {name: a, schedule: "@hourly", shell: x}
  - {name: b, schedule: "@hourly", shell: x, deadline: 5h}
  - {name: c, schedule: "@hourly", shell: x}
`)
	want := "/etc/cronfence/cronfence.yaml:2: history.retention: 1h0m0s must be longer than jobs[1].deadline (5h0m0s, line 7): " + whyDeadline
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}
