package main

import (
	"fmt"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/adminapi"
	"github.com/cronfence/cronfence/internal/wait"
)

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

func TestDurationText(t *testing.T) {
	t.Parallel()
	at := func(s string) *string { return &s }
	for _, tc := range []struct {
		run  adminapi.Run
		want string
	}{
		{adminapi.Run{StartedAt: at("2026-03-01T12:00:00Z"), FinishedAt: at("2026-03-01T12:00:00.0134Z")}, "13ms"},
		{adminapi.Run{StartedAt: at("2026-03-01T12:00:00Z"), FinishedAt: at("2026-03-01T12:00:02.46Z")}, "2.5s"},
		{adminapi.Run{StartedAt: at("2026-03-01T12:00:00Z"), FinishedAt: at("2026-03-01T12:03:05.6Z")}, "3m6s"},
		{adminapi.Run{StartedAt: at("2026-03-01T12:00:00Z")}, "-"},
		{adminapi.Run{StartedAt: at("2026-03-01T12:00:00Z"), FinishedAt: at("2026-03-01T12:00:00Z"), Result: adminapi.RunResult{Skipped: true}}, "-"},
	} {
		if got := durationText(tc.run); got != tc.want {
			t.Errorf("durationText(%v → %v) = %q, want %q", *tc.run.StartedAt, tc.run.FinishedAt, got, tc.want)
		}
	}
}
