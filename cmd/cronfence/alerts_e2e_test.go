package main

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/cmd/cronfence/internal/webhook"
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

// everyFewSeconds declares each named job, run every 5 seconds: often
// enough to see runs soon, and far from slow_run (half the interval) for a
// shell's `true` on a loaded machine.
func everyFewSeconds(names ...string) string {
	var b strings.Builder
	b.WriteString("jobs:\n")
	for _, n := range names {
		b.WriteString("  - name: " + n + "\n    schedule: \"*/5 * * * * *\"\n    shell: \"true\"\n")
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
	v1 := serveConfig(t, db, fastMonitor+everyFewSeconds("keep", "drop"))
	a := start(t, dbDir, "serve", "--config", v1, "--shutdown-grace", "2s")
	waitRan(t, st, "drop", a)
	stopServe(t, a)
	v2 := serveConfig(t, db, fastMonitor+everyFewSeconds("keep"))
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
	b := start(t, dbDir, "serve", "--config", serveConfig(t, db, fastMonitor+everyFewSeconds("keep", "extra")))
	waitRan(t, st, "extra", a, b)
	if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	b.wait(t, 10*time.Second)
	var stdout string
	wait.For(t, 30*time.Second, func() bool {
		code, o, _ := runCLI(t, dbDir, "check", "--config", v2)
		stdout = o
		return code == checkAlerting && strings.Contains(stdout, "orphan_job\textra\t")
	}, func() string { return "check did not report the orphan: " + stdout })
	if strings.Count(stdout, "orphan_job\t") != 1 {
		t.Fatalf("check printed %q, want orphan_job of extra only", stdout)
	}
}

// Three replicas on one database disagree on a job's schedule (a rolling
// deploy): config_drift is raised and reaches the webhook, and check exits
// 1. A read-only token cannot acknowledge it; an operator does, from the
// CLI: check exits 0 and lists it as acknowledged. A drifting replica
// restarts with its settings: the alert moves on, stays acknowledged, and
// the webhook is not sent it again. A third version appears: the alert
// changed, its acknowledgement ends, the webhook gets it again naming the
// acknowledgement that ended, and check exits 1.
func TestAcknowledgedAlertSilencedUntilItChanges(t *testing.T) {
	t.Parallel()
	dbDir := t.TempDir()
	db := filepath.Join(dbDir, "cronfence.db")
	st := migratedSQLite(t, db)
	hook := newHookReceiver(t)
	version := func(schedule string) string {
		return serveConfig(t, db, `tokens:
  - name: ops
    role: admin
    token: s3cret
  - name: viewer
    role: read
    token: peek
webhook:
  url: `+hook.srv.URL+`
  timeout: 2s
`+fastMonitor+`jobs:
  - name: sync
    schedule: "`+schedule+`"
    shell: "true"
`)
	}
	v1, v2 := version("0 * * * *"), version("*/30 * * * *")
	addr := freeAddr(t)
	a := start(t, dbDir, "serve", "--config", v1, "--listen", addr, "--shutdown-grace", "2s")
	b := start(t, dbDir, "serve", "--config", v2, "--shutdown-grace", "2s")
	b2 := start(t, dbDir, "serve", "--config", v2, "--shutdown-grace", "2s")
	ps := []*proc{a, b, b2}
	raised := waitDelivery(t, hook, "config_drift", "raised", 60*time.Second, ps)
	server := "http://" + addr
	if out := wantCheck(t, dbDir, checkAlerting, "alerting: 1 open alert(s)", "--config", v1); !strings.HasPrefix(out, "config_drift\tsync\t") {
		t.Fatalf("check printed %q, want the drift", out)
	}

	code, _, errOut := runCLI(t, dbDir, "alerts", "ack", "config_drift", "sync", "--server", server, "--token", "peek")
	if code != exitFailure || !strings.Contains(errOut, "FORBIDDEN") {
		t.Fatalf("ack with a read-only token: exit %d, stderr %q; want 1 and FORBIDDEN", code, errOut)
	}
	wantCheck(t, dbDir, checkAlerting, "alerting", "--config", v1)
	code, out, errOut := runCLI(t, dbDir, "alerts", "ack", "config_drift", "sync", "--config", v1, "--by", "alice", "--note", "rolling out */30",
		"--id", itoa(raised.AlertID))
	if code != 0 || !strings.Contains(out, "acknowledged by alice at ") || !strings.Contains(out, `rolling out */30`) {
		t.Fatalf("ack: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if out := wantCheck(t, dbDir, checkHealthy, "healthy: no open alert (1 acknowledged: cronfence alerts)", "--config", v1); out != "" {
		t.Fatalf("check with the drift acknowledged printed %q, want nothing", out)
	}
	code, out, _ = runCLI(t, dbDir, "alerts", "--server", server, "--token", "peek")
	if code != 0 || !strings.Contains(out, "config_drift") || !strings.Contains(out, "acknowledged by alice") {
		t.Fatalf("alerts through the server: exit %d, stdout %q", code, out)
	}

	// The same drift, another replica: b restarts with v2.
	stopServe(t, b)
	b = start(t, dbDir, "serve", "--config", v2, "--shutdown-grace", "2s")
	ps = []*proc{a, b, b2}
	bOwner := ""
	wait.For(t, 30*time.Second, func() bool {
		reps := getReplicas(t, addr)
		for _, r := range reps.Replicas {
			if r.PID == b.cmd.Process.Pid {
				bOwner = r.Owner
			}
		}
		return bOwner != "" && alertDetails(t, addr, raised.AlertID)[bOwner] != ""
	}, func() string { return "the drift did not name the restarted replica" })
	waitPasses(t, st, time.Now())
	if out := wantCheck(t, dbDir, checkHealthy, "1 acknowledged", "--config", v1); out != "" {
		t.Fatalf("check after the restart printed %q", out)
	}
	if got, _ := hook.payloads(); len(got) != 1 {
		t.Fatalf("%d webhook deliveries while the acknowledged alert stayed the same, want 1: %+v", len(got), got)
	}

	// A third version: another problem than the one acknowledged.
	c := start(t, dbDir, "serve", "--config", version("*/20 * * * *"), "--shutdown-grace", "2s")
	ps = append(ps, c)
	var again webhook.Payload
	waitPayloads(t, hook, 60*time.Second, ps, func(got []webhook.Payload) bool {
		if len(got) < 2 {
			return false
		}
		again = got[1]
		return true
	}, func() string { return "the changed alert was not delivered again" })
	if again.State != "raised" || again.AlertID != raised.AlertID || again.DeliveryID == raised.DeliveryID ||
		again.EndedAck == nil || again.EndedAck.By != "alice" || again.EndedAck.Note != "rolling out */30" {
		t.Fatalf("second delivery = %+v; want alert %d raised again under a delivery id of its own, naming alice's acknowledgement", again, raised.AlertID)
	}
	if out := wantCheck(t, dbDir, checkAlerting, "alerting: 1 open alert(s)", "--config", v1); !strings.HasPrefix(out, "config_drift\tsync\t") {
		t.Fatalf("check after the change printed %q", out)
	}
	stopReplicas(t, ps)
	if got, _ := hook.payloads(); len(got) != 2 {
		t.Errorf("%d webhook deliveries, want the raise and the raise again: %+v", len(got), got)
	}
}

// alertDetails reads one alert's details through the REST API.
func alertDetails(t *testing.T, addr string, id int64) map[string]string {
	t.Helper()
	var c client.Client
	c.Base, c.Token = "http://"+addr, "s3cret"
	var out struct {
		Alerts []client.Alert `json:"alerts"`
	}
	if err := c.Do(context.Background(), http.MethodGet, "/api/admin/cron/alerts?limit=1000", nil, &out); err != nil {
		t.Fatal(err)
	}
	for _, a := range out.Alerts {
		if a.ID == id {
			return a.Details
		}
	}
	return nil
}
