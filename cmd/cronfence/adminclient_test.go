package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAdminDirect runs the admin commands straight on the database, on
// SQLite and on PostgreSQL: pause / resume / unset and jobs showing the
// override; logs (table and JSON) and jobs' last run after a short serve
// on the same database; trigger without --config or --server refused.
// The database is created by migrate first: the admin commands create
// none. Before any run, only --config makes the jobs known.
func TestAdminDirect(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, db []string) {
		if db[0] == "--sqlite" {
			db = nil // cronfence.db in the working directory: the config's default beside it
		}
		dir := t.TempDir()
		slots := filepath.Join(dir, "slots.txt")
		cfg := writeConfig(t, dir, `jobs:
  - name: nightly
    schedule: "0 3 * * *"
    time_zone: Europe/Lisbon
    shell: "true"
  - name: tick
    schedule: "*/1 * * * * *"
    shell: echo "$CRONFENCE_SLOT" >> `+slots+`; echo tick-output
`)
		cli := func(a ...string) (int, string, string) {
			t.Helper()
			return runCLI(t, dir, args(db, a...)...)
		}
		if code, out, errOut := cli("migrate"); code != 0 {
			t.Fatalf("migrate: %d %q %q", code, out, errOut)
		}
		code, out, errOut := cli("pause", "nightly", "--config", cfg, "--note", "maintenance", "--by", "alice")
		if code != 0 || !strings.Contains(out, "nightly: override paused, by alice") || !strings.Contains(out, `"maintenance"`) {
			t.Fatalf("pause: %d %q %q", code, out, errOut)
		}
		code, out, errOut = cli("jobs", "--config", cfg)
		if code != 0 || !strings.Contains(out, "nightly") || !strings.Contains(out, "Europe/Lisbon") ||
			!strings.Contains(out, "disabled") || !strings.Contains(out, "paused by alice") {
			t.Fatalf("jobs after pause: %d %q %q", code, out, errOut)
		}
		if code, out, errOut = cli("resume", "nightly", "--config", cfg, "--by", "bob"); code != 0 || !strings.Contains(out, "override enabled, by bob") {
			t.Fatalf("resume: %d %q %q", code, out, errOut)
		}
		if code, out, errOut = cli("unset", "nightly", "--config", cfg); code != 0 || !strings.Contains(out, "override none") {
			t.Fatalf("unset: %d %q %q", code, out, errOut)
		}
		code, out, _ = cli("jobs", "--config", cfg)
		if code != 0 || strings.Contains(out, "paused") || !strings.Contains(out, "enabled") {
			t.Fatalf("jobs after unset: %d %q", code, out)
		}
		if code, out, errOut = cli("logs", "tick", "--config", cfg); code != 0 || out != "" || !strings.Contains(errOut, "no runs of tick") {
			t.Fatalf("logs before any run: %d %q %q", code, out, errOut)
		}

		// Runs to show: serve on the same database for a few slots.
		p := start(t, dir, args(db, "serve", "--config", cfg)...)
		waitForSlots(t, slots, 2, 20*time.Second, p)
		stopServe(t, p)
		code, out, errOut = cli("logs", "tick", "-n", "5")
		if code != 0 || !strings.HasPrefix(out, "STARTED") || !strings.Contains(out, " ok") {
			t.Fatalf("logs: %d %q %q", code, out, errOut)
		}
		code, out, errOut = cli("logs", "tick", "--json")
		if code != 0 {
			t.Fatalf("logs --json: %d %q", code, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) < 2 {
			t.Fatalf("logs --json: %d runs, want at least 2: %q", len(lines), out)
		}
		for _, line := range lines {
			var run map[string]any
			if err := json.Unmarshal([]byte(line), &run); err != nil {
				t.Fatalf("logs --json line %q: %v", line, err)
			}
			logs, _ := json.Marshal(run["logs"])
			if run["jobId"] != "tick" || run["manual"] != false || run["slot"] == nil || run["generation"] == nil ||
				(run["success"] == true && !strings.Contains(string(logs), "tick-output")) {
				t.Errorf("run row %v", run)
			}
		}
		code, out, errOut = cli("jobs", "--config", cfg)
		// The last run's result and the lease's holder and generation.
		if code != 0 || !strings.Contains(out, "*/1 * * * * *") || !strings.Contains(out, " ok ") || !strings.Contains(out, " gen ") {
			t.Fatalf("jobs after runs: %d %q %q", code, out, errOut)
		}

		// Usage errors.
		if code, _, errOut = cli("jobs"); code != exitUsage || !strings.Contains(errOut, "--config") {
			t.Fatalf("jobs without --config: %d %q", code, errOut)
		}
		if code, _, errOut = cli("trigger", "tick"); code != exitUsage || !strings.Contains(errOut, "--config") || !strings.Contains(errOut, "--server") {
			t.Fatalf("trigger without --config or --server: %d %q", code, errOut)
		}
		if code, _, errOut = cli("logs", "tick", "-n", "0"); code != exitUsage {
			t.Fatalf("logs -n 0: %d %q", code, errOut)
		}
	})
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

	// The sentences of direct mode; --json for the server's answer.
	code, out, errOut := cli("trigger", "long")
	busy := regexp.MustCompile(`^cronfence: trigger: job "long" is already executing \(lease held by \S+ at generation \d+\); not run, the refusal is recorded as a skipped run\n$`)
	if code != exitBusy || !busy.MatchString(errOut) {
		t.Fatalf("trigger during a run: %d %q %q, want exit 3 and direct mode's sentence", code, out, errOut)
	}
	if code, out, errOut = cli("trigger", "long", "--json"); code != exitBusy || !strings.Contains(errOut, "CRON_JOB_ALREADY_EXECUTING") {
		t.Fatalf("trigger --json during a run: %d %q %q, want exit 3 and the API's error", code, out, errOut)
	}
	code, out, errOut = cli("trigger", "quick")
	if code != 0 || !regexp.MustCompile(`^quick: the run \(owner \S+, generation \d+\) started on the server; cronfence logs -f quick follows it\n$`).MatchString(out) {
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

	// logs -n N through the server: the N newest of long's rows (a skip
	// row every second its run holds the lease, until the pause below), in
	// JSON and in the table.
	const n = 3
	for deadline := time.Now().Add(20 * time.Second); len(logRowsServer(t, cli, "long", 100)) <= n; {
		if time.Now().After(deadline) {
			t.Fatalf("long has at most %d run rows after 20s", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	rows := logRowsServer(t, cli, "long", n)
	if len(rows) != n {
		t.Fatalf("logs long -n %d --json: %d rows, want %d: %v", n, len(rows), n, rows)
	}
	for i := 1; i < len(rows); i++ {
		a, errA := time.Parse(time.RFC3339Nano, fmt.Sprint(rows[i-1]["startedAt"]))
		b, errB := time.Parse(time.RFC3339Nano, fmt.Sprint(rows[i]["startedAt"]))
		if errA != nil || errB != nil || a.Before(b) {
			t.Errorf("logs -n %d: row %d started %v after row %d's %v (%v, %v): want newest first", n, i, rows[i]["startedAt"], i-1, rows[i-1]["startedAt"], errA, errB)
		}
	}
	code, out, errOut = cli("logs", "long", "-n", strconv.Itoa(n))
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 1+n || !strings.HasPrefix(lines[0], "STARTED") ||
		!strings.Contains(out, "skipped: already_executing") {
		t.Fatalf("logs long -n %d: %d %q %q, want a header and %d rows", n, code, out, errOut, n)
	}

	code, out, errOut = cli("pause", "long", "--note", "maint")
	if code != 0 || !strings.Contains(out, "long: override paused") || !strings.Contains(out, "by ops") {
		t.Fatalf("pause through the server: %d %q %q", code, out, errOut)
	}
	code, out, errOut = cli("jobs")
	if code != 0 || !strings.Contains(out, "paused by ops") || !strings.Contains(out, "gen ") {
		t.Fatalf("jobs through the server: %d %q %q", code, out, errOut)
	}

	// resume and unset through the server, on quick: the override each
	// sets (by the token's name) is what jobs shows next.
	jobLine := func(job string) string {
		t.Helper()
		code, out, errOut := cli("jobs")
		if code != 0 {
			t.Fatalf("jobs through the server: %d %q %q", code, out, errOut)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, job+" ") {
				return l
			}
		}
		t.Fatalf("no line for %s in jobs:\n%s", job, out)
		return ""
	}
	code, out, errOut = cli("resume", "quick", "--note", "back")
	if code != 0 || !strings.HasPrefix(out, "quick: override enabled, effective enabled, by ops at ") || !strings.Contains(out, `(note: "back")`) {
		t.Fatalf("resume through the server: %d %q %q", code, out, errOut)
	}
	if l := jobLine("quick"); !strings.Contains(l, "enabled by ops at ") {
		t.Fatalf("jobs after resume quick: %q, want the override enabled by ops", l)
	}
	code, out, errOut = cli("unset", "quick")
	if code != 0 || !strings.HasPrefix(out, "quick: override none (follows the config), effective enabled, by ") {
		t.Fatalf("unset through the server: %d %q %q", code, out, errOut)
	}
	if l := jobLine("quick"); strings.Contains(l, " by ") {
		t.Fatalf("jobs after unset quick: %q, want no override", l)
	}
	if l := jobLine("long"); !strings.Contains(l, "paused by ops") {
		t.Fatalf("jobs after unset quick: long %q, want still paused", l)
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
	// Every second of the run added a skipped row: look past them.
	code, out, errOut = runCLI(t, dir, "logs", "long", "-n", "100")
	if code != 0 || !strings.Contains(out, "skipped: already_executing") || !strings.Contains(out, "manual") {
		t.Fatalf("logs direct: %d %q %q", code, out, errOut)
	}
	code, out, errOut = runCLI(t, dir, "jobs", "--config", cfg)
	if code != 0 || !strings.Contains(out, "paused by ops") || !strings.Contains(out, "quick") {
		t.Fatalf("jobs direct: %d %q %q", code, out, errOut)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "quick ") && strings.Contains(l, " by ") {
			t.Errorf("jobs direct: quick %q, want the override unset through the server", l)
		}
	}
}

// logRowsServer runs `logs JOB --json -n N` through cli and decodes its
// rows, newest first.
func logRowsServer(t *testing.T, cli func(...string) (int, string, string), job string, n int) []map[string]any {
	t.Helper()
	code, out, errOut := cli("logs", job, "--json", "-n", strconv.Itoa(n))
	if code != 0 {
		t.Fatalf("logs %s --json -n %d: %d %q", job, n, code, errOut)
	}
	return jsonLines(t, out)
}
