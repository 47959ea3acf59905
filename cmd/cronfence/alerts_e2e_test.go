package main

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/internal/wait"
	"github.com/cronfence/cronfence/store"
)

// fastMonitor is a monitor: section that checks every second and judges a
// replica dead three seconds after its last heartbeat.
const fastMonitor = `monitor:
  heartbeat_every: 1s
  check_every: 1s
  replica_stale: 3s
`

// everySecond declares each named job, run every second.
func everySecond(names ...string) string {
	var b strings.Builder
	b.WriteString("jobs:\n")
	for _, n := range names {
		b.WriteString("  - name: " + n + "\n    schedule: \"* * * * * *\"\n    shell: \"true\"\n")
	}
	return b.String()
}

// serveConfig writes a serve file on the SQLite file db into a directory
// of its own, and returns its path.
func serveConfig(t *testing.T, db, rest string) string {
	t.Helper()
	return writeConfig(t, t.TempDir(), "sqlite: "+db+"\n"+rest)
}

// waitRan waits until job has a run row in st.
func waitRan(t *testing.T, st store.Store, job string, ps ...*proc) {
	t.Helper()
	wait.For(t, 30*time.Second, func() bool {
		for _, p := range ps {
			select {
			case <-p.done:
				t.Fatalf("serve exited with %d; stderr:\n%s", p.code, p.stderr.String())
			default:
			}
		}
		runs, err := st.RunList(context.Background(), store.RunListParams{Job: job, Limit: 1})
		return err == nil && len(runs) > 0
	}, func() string { return "no run of " + job })
}

// waitPasses waits until the absence checks have run twice since since,
// by one holder: those passes judged the registry as it was then.
func waitPasses(t *testing.T, st store.Store, since time.Time) {
	t.Helper()
	wait.For(t, 30*time.Second, func() bool {
		l, err := st.LeaseGet(context.Background(), cronfence.MonitorLeaseName)
		return err == nil && l.RenewedAt.After(since.Add(2*time.Second)) && l.RenewedAt.Sub(l.AcquiredAt) >= time.Second
	}, func() string { return "the absence checks did not run twice" })
}

// A job removed from every replica's config is retired: serve restarted
// without it, and a lock --schedule line on the same database, leave check
// at 0. A job whose only replica is killed (kill -9) is an orphan: check
// exits 1 and names it.
func TestCheckRetiredAndOrphanedJobs(t *testing.T) {
	t.Parallel()
	dbDir := t.TempDir()
	db := filepath.Join(dbDir, "cronfence.db")
	st := migratedSQLite(t, db)

	// Version 1 runs keep and drop; version 2 drops drop.
	v1 := serveConfig(t, db, fastMonitor+everySecond("keep", "drop"))
	a := start(t, dbDir, "serve", "--config", v1, "--shutdown-grace", "2s")
	waitRan(t, st, "drop", a)
	stopServe(t, a)
	v2 := serveConfig(t, db, fastMonitor+everySecond("keep"))
	a = start(t, dbDir, "serve", "--config", v2, "--shutdown-grace", "2s")
	waitPasses(t, st, time.Now())
	out := wantCheck(t, dbDir, checkHealthy, "healthy", "--config", v2)
	if out != "" {
		t.Fatalf("check after drop was retired printed %q, want no alert", out)
	}

	// A crontab line under lock --schedule: its runs are no replica's.
	if code, _, errOut := runCLI(t, dbDir, "--sqlite", db, "lock", "backup", "--schedule", "* * * * * *", "--", "true"); code != 0 {
		t.Fatalf("lock --schedule: exit %d: %s", code, errOut)
	}
	waitPasses(t, st, time.Now())
	wantCheck(t, dbDir, checkHealthy, "healthy", "--config", v2)

	// A replica that runs extra is killed: nobody runs extra now.
	b := start(t, dbDir, "serve", "--config", serveConfig(t, db, fastMonitor+everySecond("keep", "extra")))
	waitRan(t, st, "extra", a, b)
	if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	b.wait(t, 10*time.Second)
	var stdout string
	wait.For(t, 30*time.Second, func() bool {
		code, o, _ := runCLI(t, dbDir, "check", "--config", v2)
		stdout = o
		return code == checkAlerting
	}, func() string { return "check did not report the orphan: " + stdout })
	if !strings.HasPrefix(stdout, "orphan_job\textra\t") || strings.Count(stdout, "\n") != 1 {
		t.Fatalf("check printed %q, want orphan_job of extra only", stdout)
	}
}
