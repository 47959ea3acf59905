package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/wait"
	"github.com/cronfence/cronfence/store"
)

// `logs` lists a job's runs newest first by when they started, as the
// table's first column reads, not in the order their rows were written (a
// run's row is written when it ends, after the skips of the slots that
// came due while it ran).
func TestLogsAreNewestStartedFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "cronfence.db")
	st := openArgs(t, []string{"--sqlite", file})
	ctx := context.Background()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	// Written in this order: two skips while the run of 12:00 ran, the
	// run itself when it ended, then the next slot's run.
	for _, r := range []store.Run{
		{Job: "nightly", Slot: base.Add(time.Minute), StartedAt: base.Add(time.Minute), Owner: "b", Success: true, Skipped: true, Reason: "already_executing"},
		{Job: "nightly", Slot: base.Add(2 * time.Minute), StartedAt: base.Add(2 * time.Minute), Owner: "b", Success: true, Skipped: true, Reason: "already_executing"},
		{Job: "nightly", Slot: base, StartedAt: base, FinishedAt: base.Add(150 * time.Second), Owner: "a", Generation: 1, LeaseName: "job:nightly", Attempt: 1, Success: true},
		{Job: "nightly", Slot: base.Add(3 * time.Minute), StartedAt: base.Add(3 * time.Minute), FinishedAt: base.Add(3*time.Minute + time.Second), Owner: "a", Generation: 2, LeaseName: "job:nightly", Attempt: 1, Success: true},
	} {
		if _, err := st.RunInsert(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"12:03:00", "12:02:00", "12:01:00", "12:00:00"}

	code, out, errOut := runCLI(t, dir, "--sqlite", file, "logs", "nightly", "--json")
	if code != 0 {
		t.Fatalf("logs --json: %d %q", code, errOut)
	}
	var got []string
	for _, row := range jsonLines(t, out) {
		got = append(got, strings.TrimSuffix(strings.SplitN(fmt.Sprint(row["startedAt"]), "T", 2)[1], "Z"))
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("logs --json started at %v, want newest first %v", got, want)
	}

	code, out, errOut = runCLI(t, dir, "--sqlite", file, "logs", "nightly")
	if code != 0 {
		t.Fatalf("logs: %d %q", code, errOut)
	}
	got = got[:0]
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		got = append(got, strings.TrimSuffix(strings.SplitN(strings.Fields(line)[0], "T", 2)[1], "Z"))
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("logs table started at %v, want newest first %v:\n%s", got, want, out)
	}
}

// logs -f prints each run once, as it ends: a run whose row lands after
// the rows of runs that started later (the skips of slots due while it
// ran) is printed when it lands, and none of them again.
func TestLogsFollowPrintsEachRunOnceInTheOrderTheyEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "cronfence.db")
	st := openArgs(t, []string{"--sqlite", file})
	ctx := context.Background()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	insert := func(min int, skipped bool, gen int64) {
		t.Helper()
		r := store.Run{Job: "nightly", Slot: base.Add(time.Duration(min) * time.Minute), StartedAt: base.Add(time.Duration(min) * time.Minute),
			Owner: "a", Success: true, Skipped: skipped, Logs: []string{fmt.Sprintf("line of 12:%02d", min)}}
		if skipped {
			r.Reason = "already_executing"
		} else {
			r.Generation, r.LeaseName, r.Attempt, r.FinishedAt = gen, "job:nightly", 1, base.Add(150*time.Second)
		}
		if _, err := st.RunInsert(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	insert(1, true, 0) // a skip while the run of 12:00 runs
	f := start(t, dir, "--sqlite", file, "logs", "nightly", "-f", "--every", "100ms")
	printed := func(min int) int { return strings.Count(f.stdout.String(), fmt.Sprintf("line of 12:%02d", min)) }
	wait.For(t, 30*time.Second, func() bool { return printed(1) == 1 }, func() string { return "logs -f printed: " + f.stdout.String() })
	insert(2, true, 0)
	insert(0, false, 1) // the run of 12:00 ends
	wait.For(t, 30*time.Second, func() bool { return printed(2) == 1 && printed(0) == 1 }, func() string { return "logs -f printed: " + f.stdout.String() })
	insert(3, true, 0)
	wait.For(t, 30*time.Second, func() bool { return printed(3) == 1 }, func() string { return "logs -f printed: " + f.stdout.String() })
	// Two more looks: nothing printed twice.
	time.Sleep(300 * time.Millisecond)
	if err := f.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := f.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("logs -f exited %d after SIGINT; stderr %s", code, f.stderr.String())
	}
	out := f.stdout.String()
	for min := range 4 {
		if n := printed(min); n != 1 {
			t.Errorf("the run of 12:%02d printed %d times, want once:\n%s", min, n, out)
		}
	}
	// In the order they ended: 12:01, then 12:02 and 12:00 (written so), then 12:03.
	order := []int{strings.Index(out, "line of 12:01"), strings.Index(out, "line of 12:02"), strings.Index(out, "line of 12:00"), strings.Index(out, "line of 12:03")}
	if !slices.IsSorted(order) {
		t.Errorf("printed out of the order the runs ended (12:01, 12:02, 12:00, 12:03):\n%s", out)
	}
}

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
