package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/internal/wait"
)

// livenessResumeBound is how soon after a replica is killed the other one
// must resume its run: far below the job's 2m lease TTL, so only the
// replica's liveness lock (its PostgreSQL session, gone with it) can have
// freed the lease; still loose enough for a loaded machine.
const livenessResumeBound = 20 * time.Second

// TestServeE2ELivenessResumesKilledRunPostgres runs two serve replicas on
// PostgreSQL and a job with lease_ttl 2m whose command records its start
// and sleeps. kill -9 of the replica running it: the other replica resumes
// the slot as attempt 2 within seconds, because serve hands the scheduler
// a store that keeps store.Liveness (a wrapper hiding it left the lease to
// expire at its TTL).
func TestServeE2ELivenessResumesKilledRunPostgres(t *testing.T) {
	t.Parallel()
	_, schema := pgtest.Schema(t) // dropped at cleanup
	db := []string{"--database", pgtest.URL(t), "--schema", schema}
	dir := t.TempDir()
	starts := filepath.Join(dir, "starts.txt")
	// One slot a minute, a few seconds from now: the run resumed after the
	// kill cannot meet a new slot's run holding the job's lease. Catch-up
	// runs the slot if the replicas start after it.
	second := time.Now().Add(4 * time.Second).Second()
	cfg := writeConfig(t, dir, fmt.Sprintf(`jobs:
  - name: long
    schedule: "%d * * * * *"
    lease_ttl: 2m
    max_attempts: 3
    catch_up_window: 20s
    shell: echo "$$ $CRONFENCE_SLOT $CRONFENCE_ATTEMPT" >> %s; exec sleep 120
`, second, starts))
	var ps []*proc
	for range 2 {
		ps = append(ps, start(t, dir, args(db, "serve", "--config", cfg, "--shutdown-grace", "500ms", "--kill-grace", "500ms")...))
	}

	first := waitForSlots(t, starts, 1, 30*time.Second, ps...)[0]
	fields := strings.Fields(first)
	if len(fields) != 3 || fields[2] != "1" {
		t.Fatalf("first start %q, want \"PID SLOT 1\"", first)
	}
	pid, slot := int(atoi(t, fields[0])), fields[1]
	// The replica running the command: its supervisor's parent.
	var victim, survivor *proc
	switch parent := ppid(ppid(pid)); parent {
	case ps[0].cmd.Process.Pid:
		victim, survivor = ps[0], ps[1]
	case ps[1].cmd.Process.Pid:
		victim, survivor = ps[1], ps[0]
	default:
		t.Fatalf("command %d has grandparent %d, neither replica (%d, %d)", pid, parent, ps[0].cmd.Process.Pid, ps[1].cmd.Process.Pid)
	}

	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-victim.done
	killed := time.Now()

	lines := waitForStarts(t, starts, 2, survivor, killed, livenessResumeBound,
		fmt.Sprintf("slot %s not resumed after its replica was killed (lease TTL 2m: did the scheduler get a store without store.Liveness?)", slot))
	took := time.Since(killed)
	if len(lines) != 2 {
		t.Fatalf("starts after the kill:\n%s\nwant the first run and one resumed run", strings.Join(lines, "\n"))
	}
	fields = strings.Fields(lines[1])
	if len(fields) != 3 || fields[1] != slot || fields[2] != "2" {
		t.Fatalf("resumed start %q, want slot %s at attempt 2", lines[1], slot)
	}
	if parent := ppid(ppid(int(atoi(t, fields[0])))); parent != survivor.cmd.Process.Pid {
		t.Errorf("the resumed command's grandparent is %d, want the surviving replica %d", parent, survivor.cmd.Process.Pid)
	}
	t.Logf("slot %s resumed as attempt 2 by the other replica %s after the kill (lease TTL 2m)", slot, took.Round(time.Millisecond))

	// The run rows agree, once the survivor's shutdown has ended the
	// resumed run: its row is attempt 2 of the slot, by the survivor.
	stopServe(t, survivor)
	rows := logRows(t, dir, db, "long")
	var resumed bool
	for _, r := range rows {
		owner, _ := r["owner"].(string)
		if r["attempt"] == float64(2) && r["slot"] != nil && strings.Contains(owner, fmt.Sprintf(":%d:", survivor.cmd.Process.Pid)) {
			resumed = true
		}
	}
	if !resumed {
		t.Errorf("no attempt-2 run row by the survivor: %v", rows)
	}
}

// waitForStarts polls the start log until it holds n lines and returns
// them; it fails when the survivor exits first or bound passes after since,
// saying why it waited. (Not waitForSlots: its timeout message reads the
// stderr of a process still writing it.)
func waitForStarts(t *testing.T, starts string, n int, survivor *proc, since time.Time, bound time.Duration, why string) []string {
	t.Helper()
	var lines []string
	wait.For(t, bound-time.Since(since), func() bool {
		if lines = slotLines(starts); len(lines) >= n {
			return true
		}
		select {
		case <-survivor.done:
			t.Fatalf("the surviving replica exited with %d; stderr:\n%s", survivor.code, survivor.stderr.String())
		default:
		}
		return false
	}, func() string {
		return fmt.Sprintf("%s, %s after; starts:\n%s", why, bound, strings.Join(lines, "\n"))
	})
	return lines
}
