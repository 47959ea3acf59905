package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/wait"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/sqlite"
)

// A failed shell job's error says how its command ended, "exit status 3"
// or "killed after timeout 1s", in the run row (what logs, the API, the
// jobs table and the dashboard show) and in serve's ERROR line; the
// script itself, however long, is kept in the run's own log lines only.
func TestServeFailedCommandSaysHowItEndedNotItsScript(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `jobs:
  - name: fails
    schedule: "* * * * * *"
    shell: |
      echo "exporting"
      # SCRIPT-BODY: in real life, many lines of the export
      exit 3
  - name: slow
    schedule: "* * * * * *"
    timeout: 1s
    shell: |
      echo "waiting"
      sleep 30 # SCRIPT-BODY of the slow job
`)
	p := start(t, dir, "serve", "--config", cfg)
	s, err := sqlite.Open(context.Background(), filepath.Join(dir, "cronfence.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	failed := func(job string) *store.Run {
		runs, err := s.RunList(context.Background(), store.RunListParams{Job: job})
		if err != nil {
			return nil
		}
		for i := range runs {
			if !runs[i].Skipped && !runs[i].Success && !runs[i].FinishedAt.IsZero() {
				return &runs[i]
			}
		}
		return nil
	}
	wait.For(t, 30*time.Second, func() bool { return failed("fails") != nil && failed("slow") != nil },
		func() string { return "a failed run of each job; serve said:\n" + p.stderr.String() })
	code, jobs, errOut := runCLI(t, dir, "jobs", "--config", cfg)
	stopServe(t, p)

	for job, want := range map[string]string{"fails": "exit status 3", "slow": "killed after timeout 1s"} {
		run := failed(job)
		if run.Error != want {
			t.Errorf("%s's run row: error %q, want %q", job, run.Error, want)
		}
		if !slices.ContainsFunc(run.Logs, func(l string) bool { return strings.Contains(l, "SCRIPT-BODY") }) {
			t.Errorf("%s's run row: logs %q lack the script, the run's detail", job, run.Logs)
		}
	}
	if code != 0 || strings.Contains(jobs, "SCRIPT-BODY") || !strings.Contains(jobs, "exit status 3") {
		t.Errorf("jobs: exit %d, stderr %q, stdout:\n%s\nwant the last run's error without the script", code, errOut, jobs)
	}
	for _, line := range strings.Split(p.stderr.String(), "\n") {
		if strings.Contains(line, "SCRIPT-BODY") {
			t.Errorf("serve's log has the script: %s", line)
		}
	}
	if !strings.Contains(p.stderr.String(), `msg="cronfence: run failed"`) {
		t.Errorf("serve logged no failed run:\n%s", p.stderr.String())
	}
}
