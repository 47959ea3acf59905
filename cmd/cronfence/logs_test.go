package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cronfence/cronfence/admin/client"
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

// logs -f prints the job's runs as they end, each with its log lines and
// its duration, under one header, until interrupted (exit 0).
func TestLogsFollowPrintsEachNewRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `jobs:
  - name: tick
    schedule: "* * * * * *"
    shell: echo "tick output $CRONFENCE_SLOT"
`)
	serve := start(t, dir, "serve", "--config", cfg)
	waitForLog(t, serve, "cronfence: run ended")
	f := start(t, dir, "logs", "tick", "--config", cfg, "-f", "-n", "1", "--every", "200ms")
	row := regexp.MustCompile(`(?m)^\S+Z\s+(\S+Z)\s+\S+\s+\d+\s+1\s+(\d+(\.\d+)?(ms|s))\s+ok$`)
	var out string
	wait.For(t, 30*time.Second, func() bool {
		out = f.stdout.String()
		return len(row.FindAllString(out, -1)) >= 3
	}, func() string { return fmt.Sprintf("logs -f printed, in 30s:\n%s\nstderr: %s", out, f.stderr.String()) })
	if err := f.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := f.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("logs -f exited %d after SIGINT, want 0; stderr %s", code, f.stderr.String())
	}
	stopReplicas(t, []*proc{serve})
	out = f.stdout.String()
	if strings.Count(out, "STARTED") != 1 || !strings.HasPrefix(out, "STARTED") {
		t.Fatalf("want one header, first:\n%s", out)
	}
	// Each row is followed by its run's output, oldest first.
	matches := row.FindAllStringSubmatchIndex(out, -1)
	prev := ""
	for i, m := range matches {
		slot := out[m[2]:m[3]]
		if slot <= prev {
			t.Fatalf("row %d's slot %s does not follow %s:\n%s", i, slot, prev, out)
		}
		prev = slot
		if !strings.Contains(out[m[1]:], "    INFO tick output ") {
			t.Fatalf("row %d is not followed by its log line:\n%s", i, out)
		}
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

func TestDurationText(t *testing.T) {
	t.Parallel()
	at := func(s string) *string { return &s }
	for _, tc := range []struct {
		run  client.Run
		want string
	}{
		{client.Run{StartedAt: at("2026-03-01T12:00:00Z"), FinishedAt: at("2026-03-01T12:00:00.0134Z")}, "13ms"},
		{client.Run{StartedAt: at("2026-03-01T12:00:00Z"), FinishedAt: at("2026-03-01T12:00:02.46Z")}, "2.5s"},
		{client.Run{StartedAt: at("2026-03-01T12:00:00Z"), FinishedAt: at("2026-03-01T12:03:05.6Z")}, "3m6s"},
		{client.Run{StartedAt: at("2026-03-01T12:00:00Z")}, "-"},
		{client.Run{StartedAt: at("2026-03-01T12:00:00Z"), FinishedAt: at("2026-03-01T12:00:00Z"), Result: client.RunResult{Skipped: true}}, "-"},
	} {
		if got := durationText(tc.run); got != tc.want {
			t.Errorf("durationText(%v → %v) = %q, want %q", *tc.run.StartedAt, tc.run.FinishedAt, got, tc.want)
		}
	}
}

// logRows runs `logs JOB --json -n 100` and decodes its rows, newest first.
func logRows(t *testing.T, dir string, db []string, job string) []map[string]any {
	t.Helper()
	code, out, errOut := runCLI(t, dir, args(db, "logs", job, "--json", "-n", "100")...)
	if code != 0 {
		t.Fatalf("logs %s: %d %q", job, code, errOut)
	}
	return jsonLines(t, out)
}

// jsonLines decodes the output of `logs --json`: one JSON object a line.
func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var rows []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("logs --json line %q: %v", line, err)
		}
		rows = append(rows, m)
	}
	return rows
}
