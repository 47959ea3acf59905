package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cronfence/cronfence"
)

// The monitor: defaults must stay the cronfence package's, so a file
// without the section runs the scheduler as a zero cronfence.Config does.
func TestMonitorDefaultsMatchCronfence(t *testing.T) {
	t.Parallel()
	if DefaultHeartbeatEvery != cronfence.DefaultHeartbeatEvery || DefaultCheckEvery != cronfence.DefaultCheckEvery ||
		DefaultSkipStreak != cronfence.DefaultSkipStreak || DefaultClockOffset != cronfence.DefaultClockOffsetAlert ||
		DefaultOrphanWindow != cronfence.DefaultOrphanWindow || DefaultFailingSlots != cronfence.DefaultFailingSlots {
		t.Fatal("monitor: defaults differ from the cronfence package's")
	}
	want := Monitor{
		HeartbeatEvery: 10 * time.Second, CheckEvery: 15 * time.Second, SkipStreak: 3, FailingSlots: 3,
		ClockOffset: 2 * time.Second, ReplicaStale: 30 * time.Second, OrphanWindow: 24 * time.Hour,
	}
	if diff := cmp.Diff(want, mustParse(t, webhookJobs).Monitor); diff != "" {
		t.Fatalf("no monitor: section (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, mustParse(t, "monitor:\n"+webhookJobs).Monitor); diff != "" {
		t.Fatalf("empty monitor: (-want +got):\n%s", diff)
	}
	want.Line = 1
	if diff := cmp.Diff(want, mustParse(t, "monitor: {}\n"+webhookJobs).Monitor); diff != "" {
		t.Fatalf("monitor: {} (-want +got):\n%s", diff)
	}
}

func TestMonitorSection(t *testing.T) {
	t.Parallel()
	const s = time.Second
	for _, tc := range []struct {
		name, src string
		want      Monitor
	}{
		{"every field", `
monitor:
  heartbeat_every: 2s
  check_every: 1m
  skip_streak: 10
  failing_slots: 5
  clock_offset: 500ms
  replica_stale: 5s
  orphan_window: 1h
`, Monitor{HeartbeatEvery: 2 * s, CheckEvery: time.Minute, SkipStreak: 10, FailingSlots: 5, ClockOffset: 500 * time.Millisecond,
			ReplicaStale: 5 * s, OrphanWindow: time.Hour, Line: 1}},
		{"replica_stale follows heartbeat_every", "monitor:\n  heartbeat_every: 1s\n  check_every: 1s\n",
			Monitor{HeartbeatEvery: s, CheckEvery: s, SkipStreak: 3, FailingSlots: 3, ClockOffset: 2 * s, ReplicaStale: 3 * s,
				OrphanWindow: 24 * time.Hour, Line: 1}},
		{"replica_stale before heartbeat_every", "monitor:\n  replica_stale: 2m\n  heartbeat_every: 1m\n",
			Monitor{HeartbeatEvery: time.Minute, CheckEvery: 15 * s, SkipStreak: 3, FailingSlots: 3, ClockOffset: 2 * s,
				ReplicaStale: 2 * time.Minute, OrphanWindow: 24 * time.Hour, Line: 1}},
		{"off", "monitor:\n  heartbeat_every: off\n  check_every: off\n",
			Monitor{HeartbeatEvery: Off, CheckEvery: Off, SkipStreak: 3, FailingSlots: 3, ClockOffset: 2 * s, ReplicaStale: 30 * s,
				OrphanWindow: 24 * time.Hour, Line: 1}},
		{"negative is off", "monitor:\n  heartbeat_every: -1s\n  check_every: -15s\n",
			Monitor{HeartbeatEvery: Off, CheckEvery: Off, SkipStreak: 3, FailingSlots: 3, ClockOffset: 2 * s, ReplicaStale: 30 * s,
				OrphanWindow: 24 * time.Hour, Line: 1}},
		{"checks off, heartbeat on", "monitor:\n  check_every: off\n  replica_stale: 20s\n",
			Monitor{HeartbeatEvery: 10 * s, CheckEvery: Off, SkipStreak: 3, FailingSlots: 3, ClockOffset: 2 * s, ReplicaStale: 20 * s,
				OrphanWindow: 24 * time.Hour, Line: 1}},
		{"heartbeat off, replica_stale free", "monitor:\n  heartbeat_every: off\n  replica_stale: 1s\n",
			Monitor{HeartbeatEvery: Off, CheckEvery: 15 * s, SkipStreak: 3, FailingSlots: 3, ClockOffset: 2 * s, ReplicaStale: s,
				OrphanWindow: 24 * time.Hour, Line: 1}},
		{"variables", "jobs: []\nmonitor:\n  check_every: ${CHECK:-1s}\n  skip_streak: ${N}\n  clock_offset: ${TTL}\n",
			Monitor{HeartbeatEvery: 10 * s, CheckEvery: s, SkipStreak: 5, FailingSlots: 3, ClockOffset: 2 * time.Minute, ReplicaStale: 30 * s,
				OrphanWindow: 24 * time.Hour, Line: 2}},
		{"bounds", "monitor:\n  check_every: 84h\n  skip_streak: 9999\n",
			Monitor{HeartbeatEvery: 10 * s, CheckEvery: 84 * time.Hour, SkipStreak: 9999, FailingSlots: 3, ClockOffset: 2 * s,
				ReplicaStale: 30 * s, OrphanWindow: 24 * time.Hour, Line: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, mustParse(t, tc.src).Monitor); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestMonitorErrors(t *testing.T) {
	t.Parallel()
	const f = "/etc/cronfence/cronfence.yaml:"
	for _, tc := range []struct{ src, want string }{
		// heartbeat_every and check_every
		{"monitor:\n  check_every: 0s\n", f + "2: monitor.check_every: must not be zero; leave it out for 15s, or write off to disable"},
		{"monitor:\n  heartbeat_every: 0s\n", f + "2: monitor.heartbeat_every: must not be zero; leave it out for 10s, or write off to disable"},
		{"monitor:\n  check_every: 500ms\n", f + `2: monitor.check_every: "500ms" must be at least 1s, or off to disable`},
		{"monitor:\n  heartbeat_every: 999ms\n", f + `2: monitor.heartbeat_every: "999ms" must be at least 1s, or off to disable`},
		{"monitor:\n  check_every: 85h\n", f + `2: monitor.check_every: "85h" must be at most 84h0m0s`},
		{"monitor:\n  check_every: 15\n", f + `2: monitor.check_every: 15 is a bare number; write a duration with its unit, e.g. "90s" or "1h30m"`},
		{"monitor:\n  check_every: never\n", f + `2: monitor.check_every: "never" is not a duration; write e.g. "30s", or off to disable`},
		{"monitor:\n  check_every: false\n", f + "2: monitor.check_every: must be a string, got the boolean false; quote it"},
		{"monitor:\n  heartbeat_every: [1s]\n", f + `2: monitor.heartbeat_every: must be a single value, got a list`},
		{"monitor:\n  check_every: ${NOPE}\n", f + "2: monitor.check_every: environment variable NOPE is not set (write ${NOPE:-default} for a default)"},
		{"monitor:\n  heartbeat_every: off\n  check_every: 1m\n",
			f + "3: monitor.check_every: the absence checks need this replica's heartbeat, but heartbeat_every is off (line 2); set check_every: off as well"},
		// skip_streak
		{"monitor:\n  skip_streak: 0\n", f + "2: monitor.skip_streak: 0 must be between 1 and 9999"},
		{"monitor:\n  failing_slots: 0\n", f + "2: monitor.failing_slots: 0 must be between 1 and 199"},
		{"monitor:\n  failing_slots: 200\n", f + "2: monitor.failing_slots: 200 must be between 1 and 199"},
		{"monitor:\n  failing_slots: three\n", f + `2: monitor.failing_slots: must be a whole number, got "three"`},
		{"monitor:\n  skip_streak: -1\n", f + "2: monitor.skip_streak: -1 must be between 1 and 9999"},
		{"monitor:\n  skip_streak: 10000\n", f + "2: monitor.skip_streak: 10000 must be between 1 and 9999"},
		{"monitor:\n  skip_streak: 2.5\n", f + "2: monitor.skip_streak: must be a whole number, got the number 2.5"},
		{"monitor:\n  skip_streak: \"3\"\n", f + `2: monitor.skip_streak: must be a whole number, got "3"`},
		// thresholds
		{"monitor:\n  clock_offset: 0s\n", f + "2: monitor.clock_offset: must be positive; leave it out for 2s"},
		{"monitor:\n  clock_offset: -1s\n", f + `2: monitor.clock_offset: "-1s" must not be negative`},
		{"monitor:\n  clock_offset: off\n", f + `2: monitor.clock_offset: "off" is not a duration; write e.g. "90s" or "1h30m"`},
		{"monitor:\n  orphan_window: 0s\n", f + "2: monitor.orphan_window: must be positive; leave it out for 24h0m0s"},
		{"monitor:\n  orphan_window: 1d\n", f + `2: monitor.orphan_window: "1d" is not a duration; write e.g. "90s" or "1h30m"`},
		{"monitor:\n  replica_stale: 0s\n", f + "2: monitor.replica_stale: must be positive; leave it out for 3 heartbeat periods"},
		{"monitor:\n  replica_stale: -30s\n", f + `2: monitor.replica_stale: "-30s" must not be negative`},
		{"monitor:\n  replica_stale: 19s\n", f + "2: monitor.replica_stale: 19s must be at least twice heartbeat_every (10s), or one late heartbeat makes a live replica look stopped"},
		{"monitor:\n  replica_stale: 3s\n  heartbeat_every: 2s\n", f + "2: monitor.replica_stale: 3s must be at least twice heartbeat_every (2s), or one late heartbeat makes a live replica look stopped"},
		// the section itself
		{"monitor:\n  check_interval: 1s\n", f + "2: monitor.check_interval: unknown field; expected one of heartbeat_every, check_every, skip_streak, failing_slots, clock_offset, replica_stale, orphan_window"},
		{"monitor:\n  check_every: 1s\n  check_every: 2s\n", f + "3: monitor.check_every: repeated (first on line 2)"},
		{"monitor: 15s\n", f + `1: monitor: must be a mapping (key: value), got "15s"`},
		{"monitor: [check_every]\n", f + "1: monitor: must be a mapping (key: value), got a list"},
		{"monitor:\n  check_every: 1s\nmonitor:\n  check_every: 2s\n", f + "3: monitor: repeated (first on line 1)"},
		{"monitor:\n  <<: {check_every: 1s}\n", f + "2: monitor.<<: YAML merge keys are not supported; use defaults:"},
	} {
		_, err := parseTest(t, tc.src+webhookJobs)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q:\n got %v\nwant %s", tc.src, err, tc.want)
		}
	}
}

// Every problem in the section is reported at once, each as an *Error
// with its line and field, and the section's problems do not hide the
// rest of the file's.
func TestMonitorErrorsCollected(t *testing.T) {
	t.Parallel()
	_, err := parseTest(t, `
monitor:
  heartbeat_every: 0s
  check_every: 100ms
  skip_streak: 0
  clock_offset: 0s
  replica_stale: 0s
  orphan_window: -1h
  unknown: 1
jobs:
  - name: a
    schedule: "* * * * *"
    command: ["true"]
    timeout: -5s
`)
	var got []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ce *Error
		if !errors.As(e, &ce) {
			t.Fatalf("%v is not a *Error", e)
		}
		got = append(got, ce.Path)
	}
	want := []string{"monitor.heartbeat_every", "monitor.check_every", "monitor.skip_streak", "monitor.clock_offset",
		"monitor.replica_stale", "monitor.orphan_window", "monitor.unknown", "jobs[0].timeout"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("problems (-want +got):\n%s\n%v", diff, err)
	}
}

// The monitor: examples in examples/cronfence.yaml (commented out) and
// docs/alerts.md parse, and state the defaults.
func TestMonitorExamplesAreTheDefaults(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ file, prefix string }{
		{"examples/cronfence.yaml", "# "},
		{"docs/alerts.md", ""},
	} {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", c.file))
		if err != nil {
			t.Fatal(err)
		}
		var section []string
		for _, line := range strings.Split(string(data), "\n") {
			line, ok := strings.CutPrefix(line, c.prefix)
			if !ok || (len(section) > 0 && !strings.HasPrefix(line, "  ")) {
				if len(section) > 0 {
					break
				}
				continue
			}
			if line == "monitor:" || len(section) > 0 {
				section = append(section, line)
			}
		}
		if len(section) != 1+len(monitorKeys) {
			t.Fatalf("%s: monitor: example %q, want every key", c.file, section)
		}
		want := defaultMonitor()
		want.Line = 1
		if diff := cmp.Diff(want, mustParse(t, strings.Join(section, "\n")+"\n").Monitor); diff != "" {
			t.Errorf("%s: the example's values are not the defaults (-want +got):\n%s", c.file, diff)
		}
	}
}
