package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/wait"
	"github.com/cronfence/cronfence/store"
)

// schedulesConfig writes a config declaring the kind "report", the job
// "nightly" and what rest adds, on the database of db (the flags of
// forEachStore), and returns its path and the global flags that go with
// it: --config applies its sqlite: file, not --sqlite.
func schedulesConfig(t *testing.T, dir string, db []string, rest string) (string, []string) {
	t.Helper()
	head := ""
	if len(db) == 2 && db[0] == "--sqlite" {
		head, db = "sqlite: "+db[1]+"\n", nil
	}
	cfg := writeConfig(t, dir, head+`kinds:
  report: echo "$CRONFENCE_JOB $CRONFENCE_ARGS" >> `+filepath.Join(dir, "report.out")+`
jobs:
  - name: nightly
    schedule: "@daily"
    shell: "true"
`+rest)
	return cfg, db
}

// runWant runs cronfence and checks its exit status, returning its stdout.
func runWant(t *testing.T, dir string, want int, args ...string) string {
	t.Helper()
	code, out, errOut := runCLI(t, dir, args...)
	if code != want {
		t.Fatalf("cronfence %q: exit %d, want %d; stdout:\n%s\nstderr:\n%s", args, code, want, out, errOut)
	}
	return out + errOut
}

// Direct mode on every store: add, show, ls, edit with the version read
// and with a stale one, rm, audit; bad input exits 2 naming the flag or
// field and writes nothing.
func TestSchedulesDirect(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, db []string) {
		dir := t.TempDir()
		runWant(t, dir, 0, append(append([]string(nil), db...), "migrate")...)
		st := openStore(t, dir, db)
		cfg, db := schedulesConfig(t, dir, db, "")
		run := func(want int, rest ...string) string {
			t.Helper()
			return runWant(t, dir, want, append(append([]string(nil), db...), rest...)...)
		}
		c := []string{"--config", cfg, "--by", "alice"}
		sched := func(want int, verb string, rest ...string) string {
			t.Helper()
			return run(want, append(append([]string{"schedules", verb}, rest...), c...)...)
		}

		for _, bad := range []struct {
			args []string
			says string
		}{
			{[]string{"t1", "--kind", "report"}, "--spec"},
			{[]string{"t1", "--spec", "61 * * * *", "--kind", "report"}, "61"},
			{[]string{"t1", "--spec", "@daily", "--kind", "nope"}, `"nope"`},
			{[]string{"t1", "--spec", "@daily", "--kind", "report", "--tz", "Mars/Olympus"}, "Mars/Olympus"},
			{[]string{"t1", "--spec", "@daily", "--kind", "report", "--args", "{tenant: 1}"}, "--args"},
			{[]string{"t1", "--spec", "@daily", "--kind", "report", "--attempts", "0"}, "--attempts"},
			{[]string{"t1", "--spec", "@daily", "--kind", "report", "--overlap", "sometimes"}, "overlap"},
			{[]string{"t1", "--spec", "@daily", "--kind", "report", "--timeout", "soon"}, "--timeout"},
			{[]string{"t1", "--spec", "@daily", "--kind", "report", "--deadline", "5m"}, "deadline"},
			{[]string{"t1", "--spec", "@daily", "--kind", "report", "--catch-up", "every"}, `catch-up must be none, latest or all, got "every"`},
			{[]string{"t1", "--spec", "@daily", "--kind", "report", "--catch-up", "all"}, `CatchUp "all" needs a CatchUpWindow`},
			{[]string{"t1", "--spec", "@daily", "--kind", "report", "--catch-up-window", "1h", "--max-catch-up", "5"}, `MaxCatchUp applies only to CatchUp "all"`},
			{[]string{"t1", "--spec", "@daily", "--kind", "report", "--catch-up", "all", "--catch-up-window", "1h", "--max-catch-up", "0"}, "--max-catch-up"},
			{[]string{"nightly", "--spec", "@daily", "--kind", "report"}, "nightly"},
			{[]string{"", "--spec", "@daily", "--kind", "report"}, "name"},
		} {
			if out := sched(2, "add", bad.args...); !strings.Contains(out, bad.says) {
				t.Errorf("add %q: %q does not name %s", bad.args, out, bad.says)
			}
		}
		if out := sched(0, "ls"); !strings.Contains(out, "none stored") {
			t.Fatalf("ls after bad input: %q", out)
		}

		out := sched(0, "add", "t1", "--spec", "0 6 * * *", "--tz", "Europe/Lisbon", "--kind", "report", "--args", `{"tenant": 1}`, "--catch-up-window", "90s")
		if !strings.Contains(out, "t1: created at version 1 by alice") {
			t.Fatalf("add: %q", out)
		}
		sched(exitConflict, "add", "t1", "--spec", "@daily", "--kind", "report")
		out = strings.Join(strings.Fields(sched(0, "show", "t1")), " ")
		// Settings left out show what they mean, not a zero.
		for _, want := range []string{"version: 1", `args: {"tenant": 1}`, "zone: Europe/Lisbon", "catch-up: latest within 1m30s",
			"attempts: 3 (default)", "lease ttl: 90s (default)", "overlap: skip (default)", "timeout: none", "backoff: 10s (default)", "deadline: none"} {
			if !strings.Contains(out, want) {
				t.Errorf("show: no %q in\n%s", want, out)
			}
		}
		if out := sched(0, "edit", "t1", "--spec", "0 7 * * *", "--if-version", "1"); !strings.Contains(out, "version 1 → 2") {
			t.Fatalf("edit: %q", out)
		}
		if out := sched(exitConflict, "edit", "t1", "--spec", "0 8 * * *", "--if-version", "1"); !strings.Contains(out, "version 2") {
			t.Fatalf("edit with a stale version: %q", out)
		}
		if out := sched(0, "edit", "t1", "--catch-up", "all", "--max-catch-up", "12", "--jitter", "1h"); !strings.Contains(out, "version 2 → 3") {
			t.Fatalf("edit: %q", out)
		}
		if out := strings.Join(strings.Fields(sched(0, "show", "t1")), " "); !strings.Contains(out, "catch-up: all within 1m30s, 12 slots back") || !strings.Contains(out, "jitter: 1h0m0s") {
			t.Fatalf("show after --catch-up all: %s", out)
		}
		out = sched(0, "show", "t1", "--json")
		if !strings.Contains(out, `"catchUp":"all"`) || !strings.Contains(out, `"maxCatchUp":12`) {
			t.Fatalf("show --json after --catch-up all: %s", out)
		}
		if !strings.Contains(out, `"spec":"0 7 * * *"`) || !strings.Contains(out, `"timeZone":"Europe/Lisbon"`) || !strings.Contains(out, `"catchUpWindow":"1m30s"`) {
			t.Fatalf("edit kept the flags not given? %s", out)
		}
		// Exclusion windows: a list given replaces the schedule's, with
		// commas inside an entry kept; a bad entry is refused naming it,
		// writing nothing; --no-exclude clears them.
		if out := sched(0, "edit", "t1", "--exclude", "2026-12-24/2026-12-27", "--exclude", "* 0-5 * * SAT,SUN"); !strings.Contains(out, "version 3 → 4") {
			t.Fatalf("edit --exclude: %q", out)
		}
		if out := sched(0, "show", "t1"); !strings.Contains(out, `exclude:    "2026-12-24/2026-12-27", "* 0-5 * * SAT,SUN"`) {
			t.Fatalf("show after --exclude: %s", out)
		}
		if out := sched(exitUsage, "edit", "t1", "--exclude", "2026-12-27/2026-12-24"); !strings.Contains(out, `exclusion "2026-12-27/2026-12-24": its end 2026-12-24T00:00:00Z is not after its start`) {
			t.Fatalf("edit with a reversed range: %q", out)
		}
		if out := sched(exitUsage, "edit", "t1", "--exclude", "* * 25 12 *", "--no-exclude"); !strings.Contains(out, "--exclude and --no-exclude") {
			t.Fatalf("edit with both: %q", out)
		}
		if out := sched(0, "edit", "t1", "--no-exclude"); !strings.Contains(out, "version 4 → 5") {
			t.Fatalf("edit --no-exclude: %q", out)
		}
		if out := sched(0, "show", "t1"); !strings.Contains(out, "exclude:    none") {
			t.Fatalf("show after --no-exclude: %s", out)
		}
		if out := sched(0, "ls"); !strings.Contains(out, "t1") || !strings.Contains(out, "0 7 * * *") {
			t.Fatalf("ls: %q", out)
		}
		// A stored schedule is a job of the replicas as much as the file's:
		// the job commands of direct mode with --config know it.
		run(0, "logs", "t1", "--config", cfg)
		run(0, "pause", "t1", "--config", cfg)
		run(0, "resume", "t1", "--config", cfg)
		run(exitFailure, "logs", "t2", "--config", cfg)
		sched(exitConflict, "rm", "t1", "--if-version", "1")
		if out := sched(0, "rm", "t1", "--if-version", "5"); !strings.Contains(out, "deleted") {
			t.Fatalf("rm: %q", out)
		}
		sched(exitFailure, "show", "t1")
		// A deleted schedule keeps its history, which logs lists.
		run(exitFailure, "logs", "t1", "--config", cfg)
		slot := time.Now().Truncate(time.Hour)
		if _, err := st.RunInsert(context.Background(), store.Run{Job: "t1", Slot: slot, StartedAt: slot, FinishedAt: slot.Add(time.Second),
			Owner: "replica-2", Generation: 1, Success: true}); err != nil {
			t.Fatal(err)
		}
		if out := run(0, "logs", "t1", "--config", cfg); !strings.Contains(out, "replica-2") {
			t.Errorf("logs of the deleted schedule: %q, want its run by replica-2", out)
		}
		run(exitFailure, "pause", "t1", "--config", cfg)
		out = sched(0, "audit", "t1")
		for _, want := range []string{"delete", "update", "spec 0 6 * * * → 0 7 * * *", "create", "alice"} {
			if !strings.Contains(out, want) {
				t.Errorf("audit: no %q in\n%s", want, out)
			}
		}
	})
}

// serve runs a kinds: entry's command for a stored schedule added
// through the API with `schedules add --server`, with the schedule's
// arguments in CRONFENCE_ARGS (as JSON: the client sends them compacted)
// and its name in CRONFENCE_JOB; with
// schedules.allow_shell, a shell schedule runs its own command.
func TestSchedulesKindRunsWithArgs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	shellOut := filepath.Join(dir, "shell.out")
	cfg, _ := schedulesConfig(t, dir, nil, `tokens:
  - name: ops
    role: admin
    token: s3cret
schedules:
  allow_shell: true
`)
	addr := freeAddr(t)
	srv := start(t, dir, "serve", "--config", cfg, "--listen", addr, "--shutdown-grace", "500ms", "--kill-grace", "500ms")
	waitHTTP(t, srv, "http://"+addr, "/readyz")
	remote := []string{"--server", "http://" + addr, "--token", "s3cret"}
	runWant(t, dir, 0, append([]string{"schedules", "add", "tenant-42", "--spec", "* * * * * *", "--kind", "report", "--args", `{"tenant": 42}`}, remote...)...)
	runWant(t, dir, 0, append([]string{"schedules", "add", "raw", "--spec", "* * * * * *", "--kind", "shell", "--args", `{"command": "echo raw-ran >> ` + shellOut + `"}`}, remote...)...)
	runWant(t, dir, 2, append([]string{"schedules", "add", "raw2", "--spec", "* * * * * *", "--kind", "shell", "--args", `{"cmd": "true"}`}, remote...)...)

	for path, want := range map[string]string{filepath.Join(dir, "report.out"): `tenant-42 {"tenant":42}`, shellOut: "raw-ran"} {
		wait.For(t, 20*time.Second, func() bool {
			b, _ := os.ReadFile(path)
			return strings.Contains(string(b), want+"\n")
		}, func() string {
			b, _ := os.ReadFile(path)
			return path + " holds " + string(b) + "; serve's stderr:\n" + srv.stderr.String()
		})
	}
	out := runWant(t, dir, 0, append([]string{"schedules", "audit"}, remote...)...)
	if !strings.Contains(out, "ops") || !strings.Contains(out, "tenant-42") || !strings.Contains(out, "raw") {
		t.Fatalf("audit through the server: %q", out)
	}
	runWant(t, dir, 0, append([]string{"schedules", "rm", "tenant-42"}, remote...)...)
	runWant(t, dir, exitFailure, append([]string{"schedules", "show", "tenant-42"}, remote...)...)
	stopServe(t, srv)
}
