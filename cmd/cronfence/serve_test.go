package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/traceid"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/sqlite"
)

// writeConfig writes a serve config into dir and returns its path.
func writeConfig(t *testing.T, dir, content string) string {
	t.Helper()
	path := filepath.Join(dir, "cronfence.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// stopServe sends SIGTERM to p and checks that it exits 0.
func stopServe(t *testing.T, p *proc) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, 20*time.Second); code != 0 {
		t.Errorf("serve exited %d after SIGTERM, want 0; stderr:\n%s", code, p.stderr.String())
	}
}

// TestServeReplicasShareSlots runs two replicas of one config on one
// database: a job every second appends its slot to a file, and no slot
// appears twice.
func TestServeReplicasShareSlots(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, db []string) {
		dir := t.TempDir()
		out := filepath.Join(dir, "slots.txt")
		cfg := writeConfig(t, dir, `jobs:
  - name: every-second
    schedule: "* * * * * *"
    lease_ttl: 5s
    shell: echo "$CRONFENCE_SLOT" >> `+out+`
`)
		if db[0] == "--sqlite" {
			db = nil // the config's default: cronfence.db beside it
		}
		a := start(t, dir, args(db, "serve", "--config", cfg)...)
		b := start(t, dir, args(db, "serve", "--config", cfg, "--log-format", "json")...)
		waitForFile(t, out, a) // both started; the first slot ran
		time.Sleep(3500 * time.Millisecond)
		for _, p := range []*proc{a, b} {
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range []*proc{a, b} {
			if code := p.wait(t, 20*time.Second); code != 0 {
				t.Errorf("serve exited %d after SIGTERM, want 0; stderr:\n%s", code, p.stderr.String())
			}
		}

		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatalf("no slot ran: %v; stderr:\n%s\n%s", err, a.stderr.String(), b.stderr.String())
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		seen := map[string]bool{}
		for _, l := range lines {
			if _, err := time.Parse(time.RFC3339, l); err != nil || !strings.HasSuffix(l, "Z") {
				t.Errorf("slot %q is not RFC 3339 UTC", l)
			}
			if seen[l] {
				t.Errorf("slot %s ran twice; all:\n%s", l, data)
			}
			seen[l] = true
		}
		if len(seen) < 3 {
			t.Errorf("%d slots in 3.5s after the first, want at least 3:\n%s", len(seen), data)
		}
		if db == nil {
			if _, err := os.Stat(filepath.Join(dir, "cronfence.db")); err != nil {
				t.Errorf("the SQLite file beside the config: %v", err)
			}
		}
	})
}

// TestServeCommandEnvironment checks the variables, env and workdir a
// job's command gets, and that a failing command's status and output land
// in its run row.
func TestServeCommandEnvironment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, dir, `defaults:
  env:
    FROM_DEFAULTS: d
jobs:
  - name: env-job
    schedule: "* * * * * *"
    workdir: work
    env:
      GREETING: hello
    shell: |
      { env | grep -E '^(CRONFENCE_|GREETING=|FROM_DEFAULTS=|TRACEPARENT=)' | sort; echo "PWD=$(pwd)"; } > env.tmp && mv env.tmp env.txt
  - name: failing
    schedule: "* * * * * *"
    shell: echo to-stdout; echo to-stderr >&2; exit 3
`)
	p := start(t, dir, "serve", "--config", cfg)
	got := waitForFile(t, filepath.Join(dir, "work", "env.txt"), p)

	vars := map[string]string{}
	for _, l := range strings.Split(got, "\n") {
		k, v, _ := strings.Cut(l, "=")
		vars[k] = v
	}
	slot, err := time.Parse(time.RFC3339, vars["CRONFENCE_SLOT"])
	if err != nil || slot.Location() != time.UTC || !slot.Equal(slot.Truncate(time.Second)) {
		t.Errorf("CRONFENCE_SLOT %q: want a whole second in RFC 3339 UTC", vars["CRONFENCE_SLOT"])
	}
	want := map[string]string{
		"CRONFENCE_JOB":             "env-job",
		"CRONFENCE_ATTEMPT":         "1",
		"CRONFENCE_MANUAL":          "false",
		"CRONFENCE_ORIGIN":          "scheduled",
		"CRONFENCE_IDEMPOTENCY_KEY": "env-job/" + vars["CRONFENCE_SLOT"],
		"GREETING":                  "hello",
		"FROM_DEFAULTS":             "d",
		"PWD":                       filepath.Join(dir, "work"),
		"TRACEPARENT":               traceid.Parent("env-job", slot, 1),
	}
	for k, v := range want {
		if vars[k] != v {
			t.Errorf("%s=%q, want %q; all:\n%s", k, vars[k], v, got)
		}
	}
	if args, ok := vars["CRONFENCE_ARGS"]; !ok || args != "" {
		t.Errorf("CRONFENCE_ARGS=%q (set %t), want it set and empty for a job of the file", args, ok)
	}
	if atoi(t, vars["CRONFENCE_GENERATION"]) < 1 {
		t.Errorf("CRONFENCE_GENERATION=%q, want a positive generation", vars["CRONFENCE_GENERATION"])
	}

	// The failing job's run row: not a success, the status named, the
	// output's lines in its logs.
	s, err := sqlite.Open(context.Background(), filepath.Join(dir, "cronfence.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var failed *store.Run
	deadline := time.Now().Add(10 * time.Second)
	for failed == nil && time.Now().Before(deadline) {
		runs, err := s.RunList(context.Background(), store.RunListParams{Job: "failing"})
		if err != nil {
			t.Fatal(err)
		}
		for i := range runs {
			if !runs[i].Skipped && !runs[i].FinishedAt.IsZero() {
				failed = &runs[i]
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopServe(t, p)
	if failed == nil {
		t.Fatalf("no finished run of the failing job; stderr:\n%s", p.stderr.String())
	}
	if failed.Success || failed.Error != "exit status 3" {
		t.Errorf("failing run: success %v, error %q; want a failure saying exit status 3", failed.Success, failed.Error)
	}
	if !slices.ContainsFunc(failed.Logs, func(l string) bool { return strings.HasSuffix(l, "to-stdout") }) ||
		!slices.ContainsFunc(failed.Logs, func(l string) bool { return strings.HasSuffix(l, "to-stderr") }) {
		t.Errorf("failing run's logs %q lack the command's output", failed.Logs)
	}
}

// TestServeBadConfig runs serve on configs with one problem each, after a
// good job that would touch a marker every second: serve exits with the
// usage status, naming the file, the line and the field, before it opens
// the database (no SQLite file beside the config), so no job ran.
func TestServeBadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		job  string // the second job's fields, from line 5
		want string // the message after "FILE:"
	}{
		{"unknown field", `  - name: typo
    schedule: "* * * * * *"
    timout: 5s
    shell: "true"
`, "7: jobs[1].timout: unknown field; expected one of name, command, shell,"},
		{"bad cron", `  - name: bad-cron
    schedule: "61 * * * *"
    shell: "true"
`, `6: jobs[1].schedule: minute field "61": value 61 out of range 0-59`},
		{"bad zone", `  - name: bad-zone
    schedule: "0 3 * * *"
    time_zone: Mars/Olympus
    shell: "true"
`, `7: jobs[1].time_zone: "Mars/Olympus" is not a time zone`},
		{"negative duration", `  - name: negative
    schedule: "0 3 * * *"
    timeout: -5s
    shell: "true"
`, `7: jobs[1].timeout: "-5s" must not be negative`},
		{"duplicate job name", `  - name: ok
    schedule: "0 3 * * *"
    shell: "true"
`, `5: jobs[1].name: "ok" is already the name of jobs[0]`},
		{"missing command", `  - name: no-command
    schedule: "0 3 * * *"
    env:
      A: b
`, "5: jobs[1]: command (an argv list) or shell (a script for /bin/sh -c) is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			marker := filepath.Join(dir, "ran")
			cfg := writeConfig(t, dir, `jobs:
  - name: ok
    schedule: "* * * * * *"
    shell: touch `+marker+`
`+tt.job)
			code, out, errOut := runCLI(t, dir, "serve", "--config", cfg)
			if code != exitUsage {
				t.Errorf("exit %d, want %d; stderr %q", code, exitUsage, errOut)
			}
			if !strings.Contains(errOut, cfg+":"+tt.want) {
				t.Errorf("stderr %q\nwant the message %q", errOut, cfg+":"+tt.want)
			}
			if !strings.HasPrefix(errOut, "cronfence: "+cfg+":") {
				t.Errorf("stderr %q does not start with the file", errOut)
			}
			if out != "" {
				t.Errorf("stdout %q, want none", out)
			}
			// Rejected before the database was opened: no scheduler
			// started, so no job ran (and serve, gone, leaves no command
			// running).
			for _, f := range []string{marker, filepath.Join(dir, "cronfence.db")} {
				if _, err := os.Stat(f); !os.IsNotExist(err) {
					t.Errorf("%s exists (%v): serve went on despite the bad config", f, err)
				}
			}
		})
	}

	t.Run("missing file", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		code, _, errOut := runCLI(t, dir, "serve", "--config", filepath.Join(dir, "missing.yaml"))
		if code != exitUsage || !strings.Contains(errOut, "missing.yaml") {
			t.Errorf("missing config: exit %d, stderr %q", code, errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, "cronfence.db")); !os.IsNotExist(err) {
			t.Errorf("cronfence.db beside a missing config: %v", err)
		}
	})
}

// TestServeShutdownCancelsLongCommand checks that SIGTERM lets a running
// command have the shutdown grace, then cancels it: serve exits 0 and the
// command's process group is gone.
func TestServeShutdownCancelsLongCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	cfg := writeConfig(t, dir, `jobs:
  - name: long
    schedule: "* * * * * *"
    shell: echo $$ > `+pidFile+`.tmp && mv `+pidFile+`.tmp `+pidFile+`; sleep 60 & wait
`)
	p := start(t, dir, "serve", "--config", cfg, "--shutdown-grace", "500ms", "--kill-grace", "1s")
	pgid := int(atoi(t, waitForFile(t, pidFile, p)))
	began := time.Now()
	stopServe(t, p)
	if d := time.Since(began); d > 10*time.Second {
		t.Errorf("serve took %s to stop", d)
	}
	groupGone(t, pgid)
}
