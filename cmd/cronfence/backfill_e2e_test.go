package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/internal/wait"
)

// Two serve replicas on PostgreSQL and `cronfence backfill` following a
// backfill of 30 past slots: the replica that drives it is killed (SIGKILL)
// halfway; the other goes on from the progress in the database, and the
// command, still following, ends with the backfill done. Every slot of the
// range runs, by the backfill (CRONFENCE_ORIGIN=backfill) or, the one in
// flight when the driver died, by the resume of its interrupted run (which
// may run it twice, as any interrupted run); none outside the range.
func TestBackfillE2ESurvivesKillingItsDriver(t *testing.T) {
	t.Parallel()
	_, schema := pgtest.Schema(t)
	db := []string{"--database", pgtest.URL(t), "--schema", schema}
	dir := t.TempDir()
	out := filepath.Join(dir, "runs.txt")
	cfg := writeConfig(t, dir, `jobs:
  - name: minutely
    schedule: "* * * * *"
    lease_ttl: 5s
    shell: sleep 0.2; echo "$CRONFENCE_SLOT $CRONFENCE_ORIGIN" >> `+out+`
`)
	if code, _, errOut := runCLI(t, dir, args(db, "migrate")...); code != 0 {
		t.Fatalf("migrate: %d %s", code, errOut)
	}
	ps, _ := startReplicas(t, dir, cfg, db, 2)
	from := time.Now().UTC().Truncate(time.Minute).Add(-45 * time.Minute)
	to := from.Add(30 * time.Minute)
	bf := start(t, dir, args(db, "backfill", "minutely", "--config", cfg, "--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339))...)
	var id string
	wait.For(t, 30*time.Second, func() bool {
		m := regexp.MustCompile(`backfill (\d+) of minutely: 30 slots`).FindStringSubmatch(bf.stdout.String())
		if m != nil {
			id = m[1]
		}
		return id != "" && len(backfillLines(out)) >= 8
	}, func() string {
		return fmt.Sprintf("backfill started (%q), 8 slots run (%d)", bf.stdout.String(), len(backfillLines(out)))
	})
	_, show, _ := runCLI(t, dir, args(db, "backfill", "show", "minutely", id, "--config", cfg)...)
	m := regexp.MustCompile(`driven by [^:\s]+:(\d+):`).FindStringSubmatch(show)
	if m == nil {
		t.Fatalf("backfill show names no driver:\n%s", show)
	}
	pid, _ := strconv.Atoi(m[1])
	killed := false
	for _, p := range ps {
		if p.cmd.Process.Pid == pid {
			if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	if !killed {
		t.Fatalf("the driver %s is none of the replicas", m[0])
	}
	if code := bf.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("backfill exited %d; stdout:\n%s\nstderr:\n%s", code, bf.stdout.String(), bf.stderr.String())
	}
	if !strings.Contains(bf.stdout.String(), "done, 30/30 slots handled") {
		t.Fatalf("backfill's end:\n%s", bf.stdout.String())
	}
	// A slot whose run died with its driver is resumed by a live replica
	// once it finds the run dead: the backfill counts it running.
	var runs map[string]int
	wait.For(t, time.Minute, func() bool {
		runs = map[string]int{}
		for _, l := range allRunLines(out) {
			runs[l]++
		}
		return len(runs) == 30
	}, func() string { return fmt.Sprintf("every slot of the range run: %v", runs) })
	twice := 0
	for slot := from; slot.Before(to); slot = slot.Add(time.Minute) {
		switch n := runs[slot.Format(time.RFC3339)]; {
		case n == 2:
			twice++
		case n != 1:
			t.Errorf("slot %s ran %d times", slot.Format(time.TimeOnly), n)
		}
	}
	if twice > 1 || len(runs) != 30 {
		t.Errorf("%d slots ran twice (at most the one in flight may), %d distinct slots ran (want the 30 of the range): %v", twice, len(runs), runs)
	}
	if _, show, _ = runCLI(t, dir, args(db, "backfill", "show", "minutely", id, "--config", cfg)...); strings.Contains(show, m[0]) {
		t.Errorf("the backfill ended under the killed driver:\n%s", show)
	}
}

// allRunLines are the slots of runs.txt's lines of origin backfill or
// resume.
func allRunLines(path string) []string {
	b, _ := os.ReadFile(path)
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		slot, origin, _ := strings.Cut(l, " ")
		if origin == "backfill" || origin == "resume" {
			out = append(out, slot)
		}
	}
	return out
}

// backfillLines are the slots of runs.txt's lines of origin backfill.
func backfillLines(path string) []string {
	b, _ := os.ReadFile(path)
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if slot, ok := strings.CutSuffix(l, " backfill"); ok {
			out = append(out, slot)
		}
	}
	return out
}
