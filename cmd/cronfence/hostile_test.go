package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/sqlite"
)

// cliHostileNames are job names the CLI must take as they are. (A NUL byte
// cannot be passed in argv at all; the REST and library tests cover it.)
var cliHostileNames = []string{
	`it's a "quoted" \name\`,
	`'; DROP TABLE cronfence_runs; --`,
	"line1\nline2",
	"\u202Eevil\u202C\u200F",
	"⏰ backup 🚀👩‍👩‍👧",
	"e\u0301\u0301\u0301",
	"../../etc/passwd",
	"a%2Fb",
	"reports/daily",
	"$(touch pwned) `id` ${HOME}",
	"-rf",
}

// jobStates reads the job_state rows of the SQLite file at path.
func jobStates(t *testing.T, path string) []store.JobState {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	states, err := s.JobStateList(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return states
}

// pause, resume, unset and logs take a hostile job name in direct mode
// and store it exactly; names the store cannot hold are usage errors
// naming the argument, and nothing is written.
func TestHostileNamesCLIDirect(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "cronfence.db")
	// The admin commands act only on jobs a config declares (or the
	// database knows), and only on a database serve or migrate made.
	var yml strings.Builder
	yml.WriteString("jobs:\n")
	for _, n := range cliHostileNames {
		yml.WriteString("  - name: " + yamlQuote(n) + "\n    schedule: \"0 0 1 1 *\"\n    shell: \"true\"\n")
	}
	cfg := writeConfig(t, dir, yml.String())
	if code, out, errOut := runCLI(t, dir, "migrate"); code != 0 {
		t.Fatalf("migrate: %d %q %q", code, out, errOut)
	}
	for _, name := range cliHostileNames {
		code, out, errOut := runCLI(t, dir, "pause", "--config", cfg, "--note="+name, "--by=ops", "--", name)
		if code != 0 || !strings.Contains(out, name) {
			t.Errorf("pause %q: %d %q %q", name, code, out, errOut)
			continue
		}
		var found *store.JobState
		for _, st := range jobStates(t, db) {
			if st.Job == name {
				found = &st
			}
		}
		if found == nil || found.Note != name || found.EnabledOverride == nil || *found.EnabledOverride {
			t.Errorf("pause %q: job_state %+v", name, found)
		}
		for _, cmd := range []string{"resume", "unset"} {
			if code, out, errOut := runCLI(t, dir, cmd, "--config", cfg, "--", name); code != 0 || !strings.Contains(out, name) {
				t.Errorf("%s %q: %d %q %q", cmd, name, code, out, errOut)
			}
		}
		if code, out, errOut := runCLI(t, dir, "logs", "--config", cfg, "--", name); code != 0 || out != "" || !strings.Contains(errOut, "no runs of "+name) {
			t.Errorf("logs %q: %d %q %q", name, code, out, errOut)
		}
	}
	states := len(jobStates(t, db))
	if states != len(cliHostileNames) {
		t.Errorf("%d job_state rows, want %d", states, len(cliHostileNames))
	}
	info, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, want string }{
		{"", "job name"}, {strings.Repeat("x", 10<<10), "job name"}, {strings.Repeat("é", 100) + "x", "job name"},
		// kong would read it as "\uFFFD\uFFFD", another name.
		{"\xff\xfe", "not valid UTF-8"},
	} {
		name := tc.name
		for _, cmd := range []string{"pause", "resume", "unset", "logs", "trigger"} {
			code, _, errOut := runCLI(t, dir, cmd, "--", name)
			if code != exitUsage || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "panic") {
				t.Errorf("%s %.20q: %d %q, want a usage error naming the job name", cmd, name, code, errOut)
			}
		}
	}
	if after, err := os.Stat(db); err != nil || !after.ModTime().Equal(info.ModTime()) || after.Size() != info.Size() {
		t.Errorf("refused commands touched the database file")
	}
	if n := len(jobStates(t, db)); n != states {
		t.Errorf("refused commands wrote job_state rows: %d, want %d", n, states)
	}
	// trigger needs --config (direct) or --server: a usage error whatever the name.
	if code, _, errOut := runCLI(t, dir, "trigger", "--", cliHostileNames[0]); code != exitUsage || !strings.Contains(errOut, "--config") {
		t.Errorf("trigger without --config or --server: %d %q", code, errOut)
	}
}

// yamlQuote writes s as a double-quoted YAML scalar (JSON's escapes are
// YAML's), with ${ written $${ so the config loader does not expand it.
func yamlQuote(s string) string {
	b, _ := json.Marshal(s)
	return strings.ReplaceAll(string(b), "${", "$${")
}

// Hostile names declared in the YAML config reach a real serve --listen,
// and trigger, logs and pause through --server find each one exactly: the
// shell job sees its own name in CRONFENCE_JOB.
func TestHostileNamesServeAndServerMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	names := cliHostileNames[:len(cliHostileNames)-1] // all but "-rf": the same path as the others
	var cfg strings.Builder
	cfg.WriteString("tokens:\n  - name: ops\n    role: admin\n    token: s3cret\njobs:\n")
	for _, n := range names {
		cfg.WriteString("  - name: " + yamlQuote(n) + "\n    schedule: \"0 0 1 1 *\"\n    shell: 'printf %s \"$CRONFENCE_JOB\"'\n")
	}
	path := writeConfig(t, dir, cfg.String())
	addr := freeAddr(t)
	srv := start(t, dir, "serve", "--config", path, "--listen", addr, "--shutdown-grace", "500ms", "--kill-grace", "500ms")
	server := []string{"--server", "http://" + addr, "--token", "s3cret"}
	// Wait for the server to answer.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if code, _, _ := runCLI(t, dir, append([]string{"jobs"}, server...)...); code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve never answered; stderr:\n%s", srv.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, name := range names {
		code, out, errOut := runCLI(t, dir, append(append([]string{"trigger", "--json"}, server...), "--", name)...)
		var started struct {
			JobID string `json:"jobId"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &started) != nil || started.JobID != name {
			t.Errorf("trigger %q: %d %q %q", name, code, out, errOut)
			continue
		}
		// The run's log line is the name the shell saw.
		deadline := time.Now().Add(20 * time.Second)
		for {
			_, out, _ := runCLI(t, dir, append(append([]string{"logs", "--json"}, server...), "--", name)...)
			var run struct {
				JobID      string   `json:"jobId"`
				FinishedAt *string  `json:"finishedAt"`
				Logs       []string `json:"logs"`
			}
			if json.Unmarshal([]byte(out), &run) == nil && run.FinishedAt != nil {
				// Each line of the command's output is one log line, "INFO " first.
				var lines []string
				for _, l := range run.Logs {
					lines = append(lines, strings.TrimPrefix(l, "INFO "))
				}
				if run.JobID != name || strings.Join(lines, "\n") != name {
					t.Errorf("logs %q: %s", name, out)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("logs %q: no finished run in 20s: %q", name, out)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if code, out, errOut := runCLI(t, dir, append(append([]string{"pause"}, server...), "--", name)...); code != 0 || !strings.Contains(out, name) {
			t.Errorf("pause --server %q: %d %q %q", name, code, out, errOut)
		}
	}
	stopServe(t, srv)
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Error("a job name was run as shell code")
	}
}
