package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// jobStateNames returns the jobs that have a job_state row in st.
func jobStateNames(t *testing.T, st store.Store) []string {
	t.Helper()
	states, err := st.JobStateList(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range states {
		names = append(names, s.Job)
	}
	return names
}

// An unknown job is an error, exit 1, as the REST API's 404 is, and
// pause, resume and unset of it write no override. With --config, the
// known jobs are the ones the file declares; without it, the ones the
// store has a trace of: a run, an override, a replica registering it.
func TestAdminUnknownJobDirect(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, db []string) {
		db = configDB(db) // SQLite: cronfence.db in dir, the config's default beside it
		dir := t.TempDir()
		cfg := writeConfig(t, dir, `jobs:
  - name: tick
    schedule: "0 3 * * *"
    shell: echo tick-output
  - name: nightly
    schedule: "0 3 * * *"
    shell: "true"
`)
		cli := func(a ...string) (int, string, string) {
			t.Helper()
			return runCLI(t, dir, args(db, a...)...)
		}
		if code, out, errOut := cli("migrate"); code != 0 {
			t.Fatalf("migrate: %d %q %q", code, out, errOut)
		}
		if code, out, errOut := cli("trigger", "tick", "--config", cfg); code != 0 {
			t.Fatalf("trigger tick: %d %q %q", code, out, errOut)
		}
		st := openStore(t, dir, db)

		// With --config: a job the file does not declare, even one the
		// store knows (stale, from an earlier file).
		off := false
		if _, err := st.JobStateSet(context.Background(), store.JobStateSetParams{Job: "retired", Enabled: &off, By: "test"}); err != nil {
			t.Fatal(err)
		}
		for _, job := range []string{"nope", "retired"} {
			for _, cmd := range []string{"pause", "resume", "unset", "logs", "trigger"} {
				code, out, errOut := cli(cmd, job, "--config", cfg)
				if code != exitFailure || out != "" || !strings.Contains(errOut, `no job named "`+job+`" in `+cfg) ||
					!strings.Contains(errOut, `it declares "tick", "nightly"`) {
					t.Errorf("%s %s --config: exit %d, stdout %q, stderr %q; want exit 1 naming the job and the file's jobs", cmd, job, code, out, errOut)
				}
			}
		}

		// Without --config: what the store keeps. tick has a run; nightly,
		// declared but never run nor registered, has no trace.
		for _, cmd := range []string{"pause", "resume", "unset", "logs"} {
			for _, job := range []string{"nope", "nightly"} {
				code, out, errOut := cli(cmd, job)
				if code != exitFailure || out != "" || !strings.Contains(errOut, `no job named "`+job+`" in `) ||
					!strings.Contains(errOut, "no runs, no override") || !strings.Contains(errOut, "--config FILE") {
					t.Errorf("%s %s: exit %d, stdout %q, stderr %q; want exit 1 saying the store knows no such job and naming --config", cmd, job, code, out, errOut)
				}
			}
		}
		if code, out, errOut := cli("pause", "tick", "--by", "alice"); code != 0 || !strings.Contains(out, "tick: override paused, by alice") {
			t.Errorf("pause of a job with a run: %d %q %q", code, out, errOut)
		}
		// A pause until a time says when it ends; one already past, or not
		// an instant, is refused (exit 2) and changes nothing.
		until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
		if code, out, errOut := cli("pause", "tick", "--by", "alice", "--until", until.Format(time.RFC3339)); code != 0 ||
			!strings.Contains(out, "tick: override paused until "+until.Format("2006-01-02T15:04:05Z")+", by alice") {
			t.Errorf("pause --until: %d %q %q", code, out, errOut)
		}
		for _, bad := range []string{time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), "tomorrow"} {
			if code, _, errOut := cli("pause", "tick", "--until", bad); code != exitUsage || !strings.Contains(errOut, "--until") {
				t.Errorf("pause --until %s: exit %d, %q; want 2 naming --until", bad, code, errOut)
			}
		}
		if code, out, errOut := cli("logs", "tick"); code != 0 || !strings.Contains(out, "manual") {
			t.Errorf("logs of a job with a run: %d %q %q", code, out, errOut)
		}
		// A stale override is known, so it can be removed.
		if code, out, errOut := cli("unset", "retired"); code != 0 || !strings.Contains(out, "retired: override none") {
			t.Errorf("unset of a job with an override: %d %q %q", code, out, errOut)
		}
		// A job a replica registers is known before it ever ran.
		if _, err := st.ReplicaHeartbeat(context.Background(), store.Replica{Owner: "replica-a", Host: "test", PID: 1, Timers: true,
			Jobs: []store.ReplicaJob{{Name: "registered", Schedule: "@daily", LeaseTTL: time.Minute}}}); err != nil {
			t.Fatal(err)
		}
		if code, out, errOut := cli("logs", "registered"); code != 0 || out != "" || !strings.Contains(errOut, "no runs of registered") {
			t.Errorf("logs of a job a replica registers: %d %q %q", code, out, errOut)
		}
		if code, out, errOut := cli("pause", "registered"); code != 0 || !strings.Contains(out, "registered: override paused") {
			t.Errorf("pause of a job a replica registers: %d %q %q", code, out, errOut)
		}

		names := jobStateNames(t, st)
		for _, job := range []string{"nope", "nightly"} {
			for _, n := range names {
				if n == job {
					t.Errorf("the refused commands wrote an override of %s: %q", job, names)
				}
			}
		}
		if len(logRows(t, dir, db, "tick")) != 1 {
			t.Errorf("the refused triggers ran tick")
		}
	})
}

// Through --server, the API's 404 for an unknown job: every admin command
// exits 1 with the API's message, and nothing is written.
func TestAdminUnknownJobServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `tokens:
  - name: ops
    role: admin
    token: s3cret
jobs:
  - name: tick
    schedule: "0 3 * * *"
    shell: "true"
`)
	addr := freeAddr(t)
	srv := start(t, dir, "serve", "--config", cfg, "--listen", addr)
	url := "http://" + addr
	waitHTTP(t, srv, url, "/readyz")
	env := []string{"CRONFENCE_SERVER=" + url, "CRONFENCE_TOKEN=s3cret"}
	for _, cmd := range []string{"pause", "resume", "unset", "logs", "trigger"} {
		p := startEnv(t, dir, env, cmd, "nope")
		code := p.wait(t, time.Minute)
		// The API's code and message, on one line.
		if errOut := p.stderr.String(); code != exitFailure || p.stdout.String() != "" ||
			!strings.HasPrefix(errOut, "cronfence: CRON_JOB_NOT_FOUND: ") || !strings.Contains(errOut, `"nope"`) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%s nope --server: exit %d, stdout %q, stderr %q; want exit 1 with the API's message", cmd, code, p.stdout.String(), errOut)
		}
	}
	stopServe(t, srv)
	if names := jobStateNames(t, openStore(t, dir, nil)); len(names) != 0 {
		t.Errorf("job states after the refused commands: %q, want none", names)
	}
}
