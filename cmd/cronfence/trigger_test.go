package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// configDB is db for a command given the config file: nil on SQLite, where
// the config's default file beside it is the replicas' database.
func configDB(db []string) []string {
	if db[0] == "--sqlite" {
		return nil
	}
	return db
}

// TestTriggerDirect runs `trigger --config` straight on the database, on
// SQLite and PostgreSQL: a succeeding command runs here, exits 0 and
// leaves one finished manual run row with its output; a failing one exits
// 1 with its error in the row; a missing --config is a usage error naming
// it, and a job not in the file an unknown job (exit 1, as the API's 404)
// naming both. migrate creates the database first: trigger creates none.
func TestTriggerDirect(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, db []string) {
		db = configDB(db)
		dir := t.TempDir()
		out := filepath.Join(dir, "out.txt")
		cfg := writeConfig(t, dir, `jobs:
  - name: write
    schedule: "0 3 * * *"
    shell: echo "$CRONFENCE_MANUAL $CRONFENCE_ATTEMPT $CRONFENCE_ORIGIN" > `+out+`; echo written-by-trigger
  - name: fail
    schedule: "0 3 * * *"
    shell: echo about-to-fail; exit 4
`)
		if code, stdout, errOut := runCLI(t, dir, args(db, "migrate")...); code != 0 {
			t.Fatalf("migrate: %d %q %q", code, stdout, errOut)
		}
		// Triggered from elsewhere: in dir, --sqlite's default cronfence.db
		// is the config's default file too, so it would pass with the
		// config's database ignored.
		elsewhere := t.TempDir()
		code, stdout, errOut := runCLI(t, elsewhere, args(db, "trigger", "write", "--config", cfg)...)
		if code != 0 || !strings.Contains(stdout, "write: the run") || !strings.Contains(stdout, "succeeded") {
			t.Fatalf("trigger write: %d %q %q, want 0 and a success line", code, stdout, errOut)
		}
		if b, err := os.ReadFile(out); err != nil || string(b) != "true 1 manual\n" {
			t.Fatalf("the command's file: %q %v, want \"true 1 manual\\n\" (CRONFENCE_MANUAL, CRONFENCE_ATTEMPT, CRONFENCE_ORIGIN)", b, err)
		}
		rows := logRows(t, dir, db, "write")
		if len(rows) != 1 {
			t.Fatalf("%d run rows of write, want 1: %v", len(rows), rows)
		}
		logs, _ := json.Marshal(rows[0]["logs"])
		if r := rows[0]; r["manual"] != true || r["success"] != true || r["finishedAt"] == nil || r["slot"] != nil ||
			r["generation"] != float64(1) || !strings.Contains(string(logs), "written-by-trigger") {
			t.Fatalf("the run row of write: %v", r)
		}

		code, stdout, errOut = runCLI(t, elsewhere, args(db, "trigger", "fail", "--config", cfg)...)
		if code != exitFailure || stdout != "" || !strings.Contains(errOut, `trigger "fail": the run`) || !strings.Contains(errOut, "failed") {
			t.Fatalf("trigger fail: %d %q %q, want exit 1 saying the run failed", code, stdout, errOut)
		}
		rows = logRows(t, dir, db, "fail")
		if len(rows) != 1 {
			t.Fatalf("%d run rows of fail, want 1: %v", len(rows), rows)
		}
		logs, _ = json.Marshal(rows[0]["logs"])
		if r := rows[0]; r["manual"] != true || r["success"] != false || r["finishedAt"] == nil ||
			!strings.Contains(r["error"].(string), "status 4") || !strings.Contains(string(logs), "about-to-fail") {
			t.Fatalf("the run row of fail: %v", r)
		}

		code, _, errOut = runCLI(t, dir, args(db, "trigger", "write")...)
		if code != exitUsage || !strings.Contains(errOut, "--config") {
			t.Fatalf("trigger without --config: %d %q, want a usage error naming --config", code, errOut)
		}
		code, _, errOut = runCLI(t, dir, args(db, "trigger", "nope", "--config", cfg)...)
		if code != exitFailure || !strings.Contains(errOut, `no job named "nope" in `+cfg) {
			t.Fatalf("trigger of a job not in the file: %d %q, want exit 1 naming nope and %s", code, errOut, cfg)
		}
		if rows := logRows(t, dir, db, "write"); len(rows) != 1 {
			t.Fatalf("the refused triggers wrote runs of write: %v", rows)
		}
	})
}

// TestTriggerDirectBusy triggers directly a job whose long run, started by
// a serve replica, holds the job's lease: trigger exits 3 (as a 409 from a
// server does) naming the holder, the command does not run, and a manual
// skip row is recorded.
func TestTriggerDirectBusy(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, db []string) {
		db = configDB(db)
		dir := t.TempDir()
		marker := filepath.Join(dir, "started")
		cfg := writeConfig(t, dir, `jobs:
  - name: long
    schedule: "* * * * * *"
    overlap: skip
    shell: echo "$CRONFENCE_MANUAL" >> `+marker+`; exec sleep 30
`)
		srv := start(t, dir, args(db, "serve", "--config", cfg, "--shutdown-grace", "500ms", "--kill-grace", "500ms")...)
		waitForFile(t, marker, srv) // the long run holds the lease

		code, stdout, errOut := runCLI(t, dir, args(db, "trigger", "long", "--config", cfg)...)
		// The holder is serve, whose owner ID is host:pid:random.
		holder := ":" + strconv.Itoa(srv.cmd.Process.Pid) + ":"
		if code != exitBusy || stdout != "" || !strings.Contains(errOut, "already executing") ||
			!strings.Contains(errOut, "lease held by") || !strings.Contains(errOut, holder) {
			t.Fatalf("trigger during a run: %d %q %q, want exit %d naming the holder %s", code, stdout, errOut, exitBusy, holder)
		}
		stopServe(t, srv)

		if b, _ := os.ReadFile(marker); string(b) != "false\n" {
			t.Errorf("the command's starts: %q, want only serve's scheduled run", b)
		}
		var skips int
		for _, r := range logRows(t, dir, db, "long") {
			if r["manual"] != true {
				continue
			}
			res, _ := r["result"].(map[string]any)
			if res["skipped"] != true || res["reason"] != "already_executing" || r["generation"] != float64(0) {
				t.Errorf("a manual run row that is not the refusal: %v", r)
				continue
			}
			skips++
		}
		if skips != 1 {
			t.Fatalf("%d manual skip rows of long, want 1", skips)
		}
	})
}

// TestTriggerDirectInterrupted sends SIGTERM to a direct trigger whose
// command runs long: the command is cancelled, trigger exits 1 and the run
// row is finished as failed (not left running).
func TestTriggerDirectInterrupted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "started")
	cfg := writeConfig(t, dir, `jobs:
  - name: long
    schedule: "0 3 * * *"
    shell: echo $$ > `+marker+`; exec sleep 60
`)
	if code, out, errOut := runCLI(t, dir, "migrate"); code != 0 {
		t.Fatalf("migrate: %d %q %q", code, out, errOut)
	}
	p := start(t, dir, "trigger", "long", "--config", cfg, "--kill-grace", "500ms")
	pid := int(atoi(t, waitForFile(t, marker, p)))
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, 20*time.Second); code != exitFailure || !strings.Contains(p.stderr.String(), "interrupted") {
		t.Fatalf("trigger after SIGINT: %d %q, want exit 1 saying it was interrupted", code, p.stderr.String())
	}
	if processAlive(pid) {
		t.Errorf("the command %d outlived its trigger", pid)
	}
	rows := logRows(t, dir, nil, "long")
	if len(rows) != 1 || rows[0]["success"] != false || rows[0]["finishedAt"] == nil {
		t.Fatalf("run rows after the interrupted trigger: %v, want one finished, failed", rows)
	}
}
