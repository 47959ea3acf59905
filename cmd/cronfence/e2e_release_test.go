package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// releaseTTL is the lease TTL of the job in TestServeE2ESIGTERMReleasesLease:
// long enough that a lease the other replica could only take at its expiry
// would keep it waiting for minutes.
const releaseTTL = 10 * time.Minute

// releaseWait is how long that test waits for the other replica to run the
// job after a SIGTERM: a deadline far below releaseTTL, not a timing claim.
const releaseWait = time.Minute

// serveStoreArgs returns the arguments for serve on the database of db (nil
// on SQLite: the config's default file beside it, in dir) and the arguments
// naming that same database for openArgs.
func serveStoreArgs(dir string, db []string) (serve, open []string) {
	if db[0] == "--sqlite" {
		return nil, []string{"--sqlite", filepath.Join(dir, "cronfence.db")}
	}
	return db, db
}

// startLine is one line a release-test command appends when it starts.
type startLine struct {
	pid        int
	slot       time.Time
	attempt    int64
	generation int64
}

func parseStart(t *testing.T, l string) startLine {
	t.Helper()
	f := strings.Fields(l)
	if len(f) != 4 {
		t.Fatalf("start line %q, want \"PID SLOT ATTEMPT GENERATION\"", l)
	}
	slot, err := time.Parse(time.RFC3339, f[1])
	if err != nil {
		t.Fatalf("start line %q: %v", l, err)
	}
	return startLine{pid: int(atoi(t, f[0])), slot: slot, attempt: atoi(t, f[2]), generation: atoi(t, f[3])}
}

// TestServeE2ESIGTERMReleasesLease runs two serve replicas and a job every
// second whose run never ends by itself, under a 10-minute lease. SIGTERM
// to the replica running it cuts the run short after the shutdown grace and
// releases the lease: the other replica runs the job (the next slot, or the
// interrupted slot resumed) at once, at the next generation, minutes before
// the lease could have expired. On SQLite, which has no liveness takeover,
// only the release can free the lease so soon. SIGTERM to that replica too
// leaves the lease row expired in the database clock, its generation and
// owner kept (a release never deletes the row).
func TestServeE2ESIGTERMReleasesLease(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, db []string) {
		ctx := context.Background()
		dir := t.TempDir()
		serveDB, openDB := serveStoreArgs(dir, db)
		starts := filepath.Join(dir, "starts.txt")
		cfg := writeConfig(t, dir, fmt.Sprintf(`jobs:
  - name: long
    schedule: "* * * * * *"
    lease_ttl: %s
    overlap: skip
    max_attempts: 3
    shell: echo "$$ $CRONFENCE_SLOT $CRONFENCE_ATTEMPT $CRONFENCE_GENERATION" >> %s; exec sleep 1000
`, releaseTTL, starts))
		var ps []*proc
		for range 2 {
			ps = append(ps, start(t, dir, args(serveDB, "serve", "--config", cfg, "--shutdown-grace", "500ms", "--kill-grace", "500ms")...))
		}
		first := parseStart(t, waitForSlots(t, starts, 1, 30*time.Second, ps...)[0])
		t.Cleanup(func() { _ = syscall.Kill(-first.pid, syscall.SIGKILL) })
		// The replica running the command: its supervisor's parent.
		var victim, survivor *proc
		switch parent := ppid(ppid(first.pid)); parent {
		case ps[0].cmd.Process.Pid:
			victim, survivor = ps[0], ps[1]
		case ps[1].cmd.Process.Pid:
			victim, survivor = ps[1], ps[0]
		default:
			t.Fatalf("command %d has grandparent %d, neither replica (%d, %d)", first.pid, parent, ps[0].cmd.Process.Pid, ps[1].cmd.Process.Pid)
		}

		stopServe(t, victim)
		stopped := time.Now()
		groupGone(t, first.pid)

		lines := waitForStarts(t, starts, 2, survivor, stopped, releaseWait,
			fmt.Sprintf("the other replica has not run the job after the SIGTERM (lease TTL %s: was the lease not released?)", releaseTTL))
		t.Logf("the other replica ran the job %s after the SIGTERMed replica exited (lease TTL %s)", time.Since(stopped).Round(time.Millisecond), releaseTTL)
		if len(lines) != 2 {
			t.Fatalf("starts:\n%s\nwant the first run and one by the other replica", strings.Join(lines, "\n"))
		}
		second := parseStart(t, lines[1])
		t.Cleanup(func() { _ = syscall.Kill(-second.pid, syscall.SIGKILL) })
		if parent := ppid(ppid(second.pid)); parent != survivor.cmd.Process.Pid {
			t.Errorf("the second command's grandparent is %d, want the other replica %d", parent, survivor.cmd.Process.Pid)
		}
		// The released row was kept: the next holder's generation follows.
		if second.generation != first.generation+1 {
			t.Errorf("generation %d after %d, want %d", second.generation, first.generation, first.generation+1)
		}
		switch {
		case second.slot.Equal(first.slot) && second.attempt == 2:
			t.Logf("the interrupted slot %s resumed as attempt 2", first.slot.Format(time.RFC3339))
		case second.slot.After(first.slot) && second.attempt == 1:
			t.Logf("a later slot %s ran after the interrupted %s", second.slot.Format(time.RFC3339), first.slot.Format(time.RFC3339))
		default:
			t.Errorf("second run: slot %s attempt %d after slot %s attempt %d, want the slot resumed or a later one",
				second.slot.Format(time.RFC3339), second.attempt, first.slot.Format(time.RFC3339), first.attempt)
		}

		st := openArgs(t, openDB)
		runs, err := st.RunList(ctx, store.RunListParams{Job: "long", Limit: store.MaxRunListLimit})
		if err != nil {
			t.Fatal(err)
		}
		victimOwner := ""
		for _, r := range runs {
			if !r.Skipped && r.Generation == first.generation {
				victimOwner = r.Owner
				if !strings.Contains(r.Error, "interrupted by shutdown") || !r.Slot.Equal(first.slot) ||
					!strings.Contains(r.Owner, fmt.Sprintf(":%d:", victim.cmd.Process.Pid)) {
					t.Errorf("the SIGTERMed run's row: %+v, want an interruption by shutdown of slot %s by replica %d", r, first.slot, victim.cmd.Process.Pid)
				}
			}
		}
		if victimOwner == "" {
			t.Errorf("no run row at generation %d (the SIGTERMed run): %+v", first.generation, runs)
		}

		// The second holder stops too: the row it leaves is its own,
		// expired now by the database clock, its generation kept.
		stopServe(t, survivor)
		groupGone(t, second.pid)
		l, err := st.LeaseGet(ctx, "job:long")
		if err != nil {
			t.Fatal(err)
		}
		now, err := st.Now(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if l.Generation != second.generation || !strings.Contains(l.Owner, fmt.Sprintf(":%d:", survivor.cmd.Process.Pid)) {
			t.Errorf("lease row %+v, want generation %d by replica %d", l, second.generation, survivor.cmd.Process.Pid)
		}
		if l.ExpiresAt.After(now) {
			t.Errorf("lease row %+v expires at %s, after the database's now %s: not released (TTL %s)", l, l.ExpiresAt, now, releaseTTL)
		}
	})
}
