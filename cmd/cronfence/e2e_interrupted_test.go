package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeE2EKilledAttemptIsLoggedInterrupted: kill -9 of the serve
// replica running a job's attempt 1 leaves a trace. The other replica
// resumes the slot as attempt 2 and records attempt 1 as a run row of its
// own: interrupted, with the killed replica as its owner, its start, an
// end, and how it was found dead (on PostgreSQL its session went with its
// process, so at once; on SQLite its lease expired, lease_ttl 3s). `logs`
// lists it.
func TestServeE2EKilledAttemptIsLoggedInterrupted(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, db []string) {
		dir := t.TempDir()
		serve, open := serveStoreArgs(dir, db)
		starts := filepath.Join(dir, "starts.txt")
		ttl, found := "3s", "its lease expired"
		if db[0] != "--sqlite" {
			ttl, found = "2m", "its owner's process was gone" // only its liveness lock can free it in time
		}
		// One slot a minute, a few seconds from now: the resumed run does
		// not meet a new slot's run holding the job's lease. Catch-up runs
		// the slot if the replicas start after it.
		second := time.Now().Add(4 * time.Second).Second()
		cfg := writeConfig(t, dir, fmt.Sprintf(`jobs:
  - name: long
    schedule: "%d * * * * *"
    lease_ttl: %s
    max_attempts: 3
    catch_up_window: 20s
    shell: echo "$$ $CRONFENCE_SLOT $CRONFENCE_ATTEMPT" >> %s; echo "working on it"; exec sleep 120
`, second, ttl, starts))
		var ps []*proc
		for range 2 {
			ps = append(ps, start(t, dir, args(serve, "serve", "--config", cfg, "--shutdown-grace", "500ms", "--kill-grace", "500ms")...))
		}
		first := strings.Fields(waitForSlots(t, starts, 1, 30*time.Second, ps...)[0])
		if len(first) != 3 || first[2] != "1" {
			t.Fatalf("first start %q, want \"PID SLOT 1\"", first)
		}
		var victim, survivor *proc
		switch parent := ppid(ppid(int(atoi(t, first[0])))); parent {
		case ps[0].cmd.Process.Pid:
			victim, survivor = ps[0], ps[1]
		case ps[1].cmd.Process.Pid:
			victim, survivor = ps[1], ps[0]
		default:
			t.Fatalf("command %s has grandparent %d, neither replica", first[0], parent)
		}
		if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-victim.done
		killed := time.Now()
		if lines := waitForStarts(t, starts, 2, survivor, killed, time.Minute, "slot not resumed after its replica was killed"); !strings.HasSuffix(lines[1], " 2") {
			t.Fatalf("second start %q, want attempt 2", lines[1])
		}
		stopServe(t, survivor)

		victimOwner := fmt.Sprintf(":%d:", victim.cmd.Process.Pid)
		var interrupted map[string]any
		for _, r := range logRows(t, dir, open, "long") {
			if owner, _ := r["owner"].(string); r["attempt"] == float64(1) && strings.Contains(owner, victimOwner) {
				interrupted = r
			}
		}
		if interrupted == nil {
			t.Fatalf("logs has no row of attempt 1 by the killed replica (%s): %v", victimOwner, logRows(t, dir, open, "long"))
		}
		result, _ := interrupted["result"].(map[string]any)
		why, _ := interrupted["error"].(string)
		if interrupted["success"] != false || result["reason"] != "interrupted" || interrupted["startedAt"] == nil ||
			interrupted["finishedAt"] == nil || !strings.Contains(why, found) || !strings.Contains(why, victimOwner) {
			t.Errorf("attempt 1's row = %v; want interrupted, not a success, with its start, an end, and an error naming its owner and saying %q", interrupted, found)
		}
		code, table, errOut := runCLI(t, dir, args(open, "logs", "long")...)
		t.Logf("logs long:\n%s", table)
		var line string
		for _, l := range strings.Split(table, "\n") {
			if strings.Contains(l, victimOwner) {
				line = l
			}
		}
		if code != 0 || !strings.Contains(line, "interrupted") || !strings.Contains(line, interrupted["startedAt"].(string)[:19]) {
			t.Errorf("logs long: exit %d, stderr %q, table:\n%s\nwant attempt 1 listed as interrupted with its owner and start", code, errOut, table)
		}
	})
}
