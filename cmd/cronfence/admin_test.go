package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pause / resume / unset directly on a SQLite file, then `jobs --config`
// shows the override and who set it.
func TestAdminOverrideDirect(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `jobs:
  - name: nightly
    schedule: "0 3 * * *"
    time_zone: Europe/Lisbon
    shell: "true"
`)
	code, out, errOut := runCLI(t, dir, "pause", "nightly", "--note", "maintenance", "--by", "alice")
	if code != 0 || !strings.Contains(out, "nightly: override paused, by alice") || !strings.Contains(out, `"maintenance"`) {
		t.Fatalf("pause: %d %q %q", code, out, errOut)
	}
	code, out, errOut = runCLI(t, dir, "jobs", "--config", cfg)
	if code != 0 || !strings.Contains(out, "nightly") || !strings.Contains(out, "Europe/Lisbon") ||
		!strings.Contains(out, "disabled") || !strings.Contains(out, "paused by alice") {
		t.Fatalf("jobs after pause: %d %q %q", code, out, errOut)
	}
	if code, out, errOut = runCLI(t, dir, "resume", "nightly", "--by", "bob"); code != 0 || !strings.Contains(out, "override enabled, by bob") {
		t.Fatalf("resume: %d %q %q", code, out, errOut)
	}
	if code, out, errOut = runCLI(t, dir, "unset", "nightly"); code != 0 || !strings.Contains(out, "override none") {
		t.Fatalf("unset: %d %q %q", code, out, errOut)
	}
	code, out, _ = runCLI(t, dir, "jobs", "--config", cfg)
	if code != 0 || strings.Contains(out, "paused") || !strings.Contains(out, "enabled") {
		t.Fatalf("jobs after unset: %d %q", code, out)
	}
	// Usage errors.
	if code, _, errOut = runCLI(t, dir, "jobs"); code != exitUsage || !strings.Contains(errOut, "--config") {
		t.Fatalf("jobs without --config: %d %q", code, errOut)
	}
	if code, _, errOut = runCLI(t, dir, "trigger", "nightly"); code != exitUsage || !strings.Contains(errOut, "--server") {
		t.Fatalf("trigger without --server: %d %q", code, errOut)
	}
	if code, _, errOut = runCLI(t, dir, "logs", "nightly", "-n", "0"); code != exitUsage {
		t.Fatalf("logs -n 0: %d %q", code, errOut)
	}
}

// Server mode against a real `serve --listen`: pause, jobs, trigger (202
// and 409 with exit 3), logs; then logs directly on the database.
func TestAdminServerMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "started")
	cfg := writeConfig(t, dir, `tokens:
  - name: ops
    role: admin
    token: s3cret
  - name: viewer
    role: read
    token: r3ad
jobs:
  - name: long
    schedule: "* * * * * *"
    shell: echo $$ > `+marker+`; sleep 30
  - name: quick
    schedule: "0 0 1 1 *"
    shell: echo hello from quick
`)
	addr := freeAddr(t)
	srv := start(t, dir, "serve", "--config", cfg, "--listen", addr, "--shutdown-grace", "500ms", "--kill-grace", "500ms")
	waitForFile(t, marker, srv) // long runs and holds its lease
	url := "http://" + addr
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(url + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	env := []string{"CRONFENCE_SERVER=" + url, "CRONFENCE_TOKEN=s3cret"}
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		p := startEnv(t, dir, env, args...)
		code := p.wait(t, time.Minute)
		return code, p.stdout.String(), p.stderr.String()
	}

	code, out, errOut := cli("trigger", "long")
	if code != exitBusy || !strings.Contains(errOut, "CRON_JOB_ALREADY_EXECUTING") || !strings.Contains(errOut, "lease held by") {
		t.Fatalf("trigger during a run: %d %q %q, want exit 3", code, out, errOut)
	}
	code, out, errOut = cli("trigger", "quick")
	if code != 0 || !strings.Contains(out, `"jobId":"quick"`) {
		t.Fatalf("trigger quick: %d %q %q", code, out, errOut)
	}
	// The manual run finishes quickly.
	var runs []map[string]any
	for deadline := time.Now().Add(10 * time.Second); ; {
		code, out, errOut = cli("logs", "quick", "--json")
		if code != 0 {
			t.Fatalf("logs --json: %d %q", code, errOut)
		}
		runs = runs[:0]
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var m map[string]any
			if line != "" {
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatalf("logs --json line %q: %v", line, err)
				}
				runs = append(runs, m)
			}
		}
		if len(runs) == 1 && runs[0]["finishedAt"] != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no finished manual run of quick: %q", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if runs[0]["manual"] != true || runs[0]["success"] != true || runs[0]["jobId"] != "quick" {
		t.Fatalf("manual run row: %v", runs[0])
	}
	code, out, _ = cli("logs", "quick")
	if code != 0 || !strings.Contains(out, "STARTED") || !strings.Contains(out, "manual") || !strings.Contains(out, " ok") {
		t.Fatalf("logs table: %d %q", code, out)
	}

	code, out, errOut = cli("pause", "long", "--note", "maint")
	if code != 0 || !strings.Contains(out, "long: override paused") || !strings.Contains(out, "by ops") {
		t.Fatalf("pause through the server: %d %q %q", code, out, errOut)
	}
	code, out, errOut = cli("jobs")
	if code != 0 || !strings.Contains(out, "paused by ops") || !strings.Contains(out, "gen ") {
		t.Fatalf("jobs through the server: %d %q %q", code, out, errOut)
	}

	// Errors of the API: unknown job, read-only token, wrong token.
	if code, _, errOut = cli("pause", "nope"); code != exitFailure || !strings.HasPrefix(errOut, "cronfence: ") || !strings.Contains(errOut, "nope") {
		t.Fatalf("pause unknown job: %d %q", code, errOut)
	}
	p := startEnv(t, dir, []string{"CRONFENCE_SERVER=" + url}, "resume", "long", "--token", "r3ad")
	if code := p.wait(t, time.Minute); code != exitFailure || !strings.Contains(p.stderr.String(), "cronfence: ") {
		t.Fatalf("resume with a read token: %d %q", code, p.stderr.String())
	}
	p = startEnv(t, dir, []string{"CRONFENCE_SERVER=" + url}, "jobs", "--token", "wrong")
	if code := p.wait(t, time.Minute); code != exitFailure || !strings.Contains(p.stderr.String(), "cronfence: UNAUTHORIZED: ") {
		t.Fatalf("jobs with a wrong token: %d %q", code, p.stderr.String())
	}
	stopServe(t, srv)

	// Direct mode on the same SQLite file (beside the config, the cwd).
	code, out, errOut = runCLI(t, dir, "logs", "long", "-n", "5")
	if code != 0 || !strings.Contains(out, "skipped: already_executing") || !strings.Contains(out, "manual") {
		t.Fatalf("logs direct: %d %q %q", code, out, errOut)
	}
	code, out, errOut = runCLI(t, dir, "jobs", "--config", cfg)
	if code != 0 || !strings.Contains(out, "paused by ops") || !strings.Contains(out, "quick") {
		t.Fatalf("jobs direct: %d %q %q", code, out, errOut)
	}
}
