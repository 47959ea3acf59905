package main

import (
	"strings"
	"testing"
	"time"
)

// jobs shows no next slot for a job that will not run: one declared
// disabled says so, one paused says paused; an enabled one shows its slot.
func TestJobsShowNoNextSlotForAJobThatWillNotRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `jobs:
  - name: on
    schedule: "0 3 * * *"
    shell: "true"
  - name: off
    schedule: "0 3 * * *"
    enabled: false
    shell: "true"
  - name: held
    schedule: "0 3 * * *"
    shell: "true"
`)
	if code, out, errOut := runCLI(t, dir, "migrate"); code != 0 {
		t.Fatalf("migrate: %d %q %q", code, out, errOut)
	}
	if code, out, errOut := runCLI(t, dir, "pause", "held", "--config", cfg); code != 0 {
		t.Fatalf("pause: %d %q %q", code, out, errOut)
	}
	code, out, errOut := runCLI(t, dir, "jobs", "--config", cfg)
	if code != 0 {
		t.Fatalf("jobs: %d %q %q", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	col := strings.Index(lines[0], "NEXT")
	if col < 0 {
		t.Fatalf("jobs has no NEXT column:\n%s", out)
	}
	next := map[string]string{}
	for _, l := range lines[1:] {
		next[strings.Fields(l)[0]] = strings.Fields(l[col:])[0]
	}
	if _, err := time.Parse(time.RFC3339, next["on"]); err != nil {
		t.Errorf("NEXT of on: %q, want its next slot", next["on"])
	}
	if next["off"] != "disabled" || next["held"] != "paused" {
		t.Errorf("NEXT of off (declared disabled) %q, of held (paused) %q; want disabled and paused:\n%s", next["off"], next["held"], out)
	}
}
