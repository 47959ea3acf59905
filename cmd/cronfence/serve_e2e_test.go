package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/internal/wait"
)

// slotLines returns the whole lines of path (a partly written last line is
// left out).
func slotLines(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	s := string(b)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	} else {
		return nil
	}
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// distinct counts the distinct lines of lines.
func distinct(lines []string) int {
	seen := map[string]bool{}
	for _, l := range lines {
		seen[l] = true
	}
	return len(seen)
}

// waitForSlots waits until path holds at least n distinct lines, failing
// the test after timeout or when one of procs exits.
func waitForSlots(t *testing.T, path string, n int, timeout time.Duration, procs ...*proc) []string {
	t.Helper()
	var lines []string
	wait.For(t, timeout, func() bool {
		lines = slotLines(path)
		if distinct(lines) >= n {
			return true
		}
		for _, p := range procs {
			select {
			case <-p.done:
				t.Fatalf("cronfence exited with %d while waiting for %d slots in %s; stderr:\n%s", p.code, n, path, p.stderr.String())
			default:
			}
		}
		return false
	}, func() string {
		var errs []string
		for _, p := range procs {
			errs = append(errs, p.stderr.String())
		}
		return fmt.Sprintf("%d distinct slots in %s, want %d:\n%s\nstderr:\n%s", distinct(lines), path, n,
			strings.Join(lines, "\n"), strings.Join(errs, "\n---\n"))
	})
	return lines
}

// TestServeE2EThreeReplicasSQLite runs three replicas of one config on the
// default SQLite file beside it: a job every second appends its slot to a
// file, and after several slots every slot from the first to the last ran
// exactly once. As on PostgreSQL (TestServeE2EThreeReplicasPostgres), the
// job allows overlap, so a run slowed past a second by a loaded machine
// does not turn the next slot into a (correct) skip.
func TestServeE2EThreeReplicasSQLite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "slots.txt")
	cfg := writeConfig(t, dir, everySecondConfig(out, "allow"))
	ps, _ := startReplicas(t, dir, cfg, nil, 3)
	waitForSlots(t, out, 6, 30*time.Second, ps...)
	stopReplicas(t, ps)
	lines := slotLines(out)
	checkSlotsOnce(t, lines, true)
	t.Logf("%d slots, %d lines, three replicas", distinct(lines), len(lines))
	if t.Failed() {
		_, rows, _ := runCLI(t, dir, "logs", "every-second", "-n", "100")
		t.Logf("the job's runs:\n%s", rows)
	}
	if _, err := os.Stat(filepath.Join(dir, "cronfence.db")); err != nil {
		t.Errorf("the SQLite file beside the config: %v", err)
	}
}

// ppid returns the parent pid of process pid, or 0 when it cannot be read.
func ppid(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "PPid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// TestServeE2EKillReplicaRunningLongJob kills with SIGKILL the replica
// running a long command: the command dies with it, and the surviving
// replica keeps running the other job's slots.
func TestServeE2EKillReplicaRunningLongJob(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ticks := filepath.Join(dir, "ticks.txt")
	cfg := writeConfig(t, dir, `jobs:
  - name: long
    schedule: "* * * * * *"
    overlap: skip
    shell: echo "$$ $CRONFENCE_SLOT" > `+dir+`/pid.tmp.$CRONFENCE_GENERATION && mv `+dir+`/pid.tmp.$CRONFENCE_GENERATION `+dir+`/pid.$CRONFENCE_GENERATION; exec sleep 60
  - name: tick
    schedule: "* * * * * *"
    lease_ttl: 2s
    shell: echo "$CRONFENCE_SLOT" >> `+ticks+`
`)
	a := start(t, dir, "serve", "--config", cfg, "--shutdown-grace", "500ms", "--kill-grace", "500ms")
	b := start(t, dir, "serve", "--config", cfg, "--shutdown-grace", "500ms", "--kill-grace", "500ms")

	// The first long run's pid file.
	var pidFile string
	deadline := time.Now().Add(15 * time.Second)
	for pidFile == "" {
		files, _ := filepath.Glob(filepath.Join(dir, "pid.[0-9]*"))
		if len(files) > 0 {
			pidFile = files[0]
			break
		}
		for _, p := range []*proc{a, b} {
			select {
			case <-p.done:
				t.Fatalf("cronfence exited with %d before the long job started; stderr:\n%s", p.code, p.stderr.String())
			default:
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no run of the long job after 15s; stderr:\n%s\n---\n%s", a.stderr.String(), b.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	line := waitForFile(t, pidFile, nil)
	pidStr, _, _ := strings.Cut(line, " ")
	pid := int(atoi(t, pidStr))

	// The replica running the command: its supervisor's parent.
	var victim, survivor *proc
	switch parent := ppid(ppid(pid)); parent {
	case a.cmd.Process.Pid:
		victim, survivor = a, b
	case b.cmd.Process.Pid:
		victim, survivor = b, a
	default:
		t.Fatalf("command %d has grandparent %d, neither replica (%d, %d)", pid, parent, a.cmd.Process.Pid, b.cmd.Process.Pid)
	}

	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-victim.done
	killed := len(slotLines(ticks))

	// The command dies with its replica.
	deadline = time.Now().Add(10 * time.Second)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("command %d still alive 10s after its replica was killed", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	groupGone(t, pid) // the command led its own group

	// The survivor keeps running tick: two new slots after the kill.
	deadline = time.Now().Add(12 * time.Second)
	for {
		lines := slotLines(ticks)
		if len(lines) >= killed {
			if distinct(lines[killed:]) >= 2 {
				break
			}
		}
		select {
		case <-survivor.done:
			t.Fatalf("surviving replica exited with %d; stderr:\n%s", survivor.code, survivor.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("tick slots after the kill: %q, want 2 new; survivor stderr:\n%s", lines[min(killed, len(lines)):], survivor.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopServe(t, survivor)
}

// TestServeE2EPutStoreUnavailable stops the database under a serving
// replica: PUT answers 503 STORE_UNAVAILABLE; once the database is back,
// the same PUT answers 200.
func TestServeE2EPutStoreUnavailable(t *testing.T) {
	t.Parallel()
	cluster := pgtest.NewCluster(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `tokens:
  - name: ops
    role: admin
    token: s3cret
jobs:
  - name: nightly
    schedule: "0 3 * * *"
    shell: "true"
`)
	addr := freeAddr(t)
	p := start(t, dir, "serve", "--config", cfg, "--database", cluster.URL(), "--listen", addr,
		"--shutdown-grace", "500ms", "--kill-grace", "500ms")

	client := &http.Client{Timeout: 20 * time.Second}
	waitHTTP(t, p, "http://"+addr, "/healthz")
	put := func() (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("PUT", "http://"+addr+"/api/admin/cron/nightly", strings.NewReader(`{"enabled": false, "note": "db test"}`))
		req.Header.Set("Authorization", "Bearer s3cret")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("PUT: %v; stderr:\n%s", err, p.stderr.String())
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	if code, body := put(); code != http.StatusOK {
		t.Fatalf("PUT with the database up: %d %v", code, body)
	}

	cluster.Stop(t)
	if code, body := put(); code != http.StatusServiceUnavailable || body["code"] != "STORE_UNAVAILABLE" {
		t.Fatalf("PUT with the database stopped: %d %v, want 503 STORE_UNAVAILABLE", code, body)
	}

	cluster.Start(t)
	deadline := time.Now().Add(15 * time.Second)
	for {
		code, body := put()
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("PUT after the database restarted: %d %v, want 200", code, body)
		}
		time.Sleep(100 * time.Millisecond) // the pool reconnects
	}
	stopServe(t, p)
}
