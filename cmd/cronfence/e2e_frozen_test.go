package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cronfence/cronfence/internal/pgtest"
)

// payoutsComplete is a shell job as the README shows it: its effect and the
// slot's completion commit in one psql transaction, complete() its last
// statement before COMMIT. complete() fences as fence() does (CF001 when
// this generation no longer holds the lease) and marks the slot completed,
// so a run whose serve stops after this COMMIT, before recording the run's
// end, is never run again.
const payoutsComplete = `psql -X -v ON_ERROR_STOP=1 "$DATABASE_URL" <<SQL
BEGIN;
INSERT INTO payouts (slot) VALUES ('$CRONFENCE_SLOT');
SELECT cronfence.complete('$CRONFENCE_LEASE', $CRONFENCE_GENERATION);
COMMIT;
SQL
`

// payoutsFence is the same job fenced with fence() alone: a deposed writer
// cannot commit, but the slot is completed only when serve records the
// run's end.
const payoutsFence = `psql -X -v ON_ERROR_STOP=1 "$DATABASE_URL" <<SQL
BEGIN;
SELECT cronfence.fence('$CRONFENCE_LEASE', $CRONFENCE_GENERATION);
INSERT INTO payouts (slot) VALUES ('$CRONFENCE_SLOT');
COMMIT;
SQL
`

// frozenTail ends the job in the test, after its transaction: a line for
// the test to wait on (the shell's pid, the lease, the generation, the
// attempt), then more work, so that serve, frozen when the line appears,
// has not recorded the run's end yet.
const frozenTail = `echo "$$ $CRONFENCE_LEASE $CRONFENCE_GENERATION $CRONFENCE_ATTEMPT" >> '%s'
exec sleep 2
`

const (
	// frozenTTL is the job's lease TTL: renewed every 2/3 s, expired 2 s
	// after its owner stops.
	frozenTTL = 2 * time.Second
	// frozenFor is how long the replica that ran the job stays frozen: well
	// past the TTL, while the other replicas look for dead runs every
	// 0.5 s (Config.ResumeEvery).
	frozenFor = 4 * frozenTTL
	// frozenBound bounds every wait of the test on the replicas.
	frozenBound = 30 * time.Second
)

// TestServeE2EFrozenAfterCommit is issue 10's case with real processes:
// three serve replicas on PostgreSQL, one slot of a shell job whose psql
// transaction commits its effect, and the replica that ran it frozen with
// SIGSTOP right after that commit, before it could record the run's end,
// for well past the lease TTL; then SIGCONT.
//
// With complete() in the transaction the slot was completed with the
// effect: the other replicas, finding the lease expired, do not resume it;
// one effect, one attempt. The control, the same job with fence() alone,
// shows why complete() exists: the slot, still running when the lease
// expired, is resumed by another replica (attempt 2), whose fence passes,
// and the effect is committed twice. Fencing refuses a deposed writer; it
// cannot tell that a live writer's effect already landed.
func TestServeE2EFrozenAfterCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: three serve replicas, one frozen for seconds of real time")
	}
	t.Parallel()
	tests := []struct {
		name     string
		job      string // the job's transaction
		effects  int    // the slot's committed effects at the end
		attempts int    // the slot's attempts at the end: 2 when it was resumed
	}{
		{"complete", payoutsComplete, 1, 1},
		// If this stops reproducing (one effect), the test no longer shows
		// what complete() is for: find out why before changing it.
		{"fence alone (control)", payoutsFence, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { testFrozenAfterCommit(t, tt.job, tt.effects, tt.attempts) })
	}
}

func testFrozenAfterCommit(t *testing.T, job string, wantEffects, wantAttempts int) {
	ctx := context.Background()
	pool, schema := pgtest.Schema(t) // dropped at cleanup
	url := pgtest.URL(t)
	db := []string{"--database", url, "--schema", schema}
	dir := t.TempDir()
	if code, _, errOut := runCLI(t, dir, args(db, "migrate")...); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, errOut)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE `+schema+`.payouts (id bigint GENERATED ALWAYS AS IDENTITY, slot timestamptz NOT NULL)`); err != nil {
		t.Fatal(err)
	}

	// One slot, a few seconds from now (its only one this year): the
	// replicas are up before it, and no later slot of the job can meet
	// the frozen run.
	slot := time.Now().UTC().Truncate(time.Second).Add(6 * time.Second)
	spec := fmt.Sprintf("%d %d %d %d %d *", slot.Second(), slot.Minute(), slot.Hour(), slot.Day(), int(slot.Month()))
	marker := filepath.Join(dir, "marker.txt")
	// The test's schema stands for the README's "cronfence", and psql
	// finds payouts there.
	shell := strings.ReplaceAll(job, "cronfence.", schema+".") + fmt.Sprintf(frozenTail, marker)
	cfg := writeConfig(t, dir, fmt.Sprintf(`jobs:
  - name: payouts
    schedule: %q
    time_zone: UTC
    lease_ttl: %s
    max_attempts: 3
    env:
      DATABASE_URL: %q
      PGOPTIONS: "-c search_path=%s"
    shell: |
%s`, spec, frozenTTL, url, schema, indent(shell, "      ")))
	var ps []*proc
	for range 3 {
		ps = append(ps, start(t, dir, args(db, "serve", "--config", cfg, "--shutdown-grace", "1s", "--kill-grace", "500ms")...))
	}
	stderr := func() string {
		var b strings.Builder
		for i, p := range ps {
			fmt.Fprintf(&b, "--- replica %d (pid %d) stderr:\n%s", i, p.cmd.Process.Pid, p.stderr.String())
		}
		return b.String()
	}
	alive := func() {
		t.Helper()
		for i, p := range ps {
			select {
			case <-p.done:
				t.Fatalf("replica %d exited with %d\n%s", i, p.code, stderr())
			default:
			}
		}
	}

	// The first run's transaction committed: find its replica and freeze it.
	var first markerLine
	for lines := slotLines(marker); ; lines = slotLines(marker) {
		alive()
		if len(lines) > 0 {
			first = parseMarker(t, lines[0])
			break
		}
		if st := slotState(t, pool, schema, slot); st.status == "failed" {
			t.Fatalf("the run of slot %s failed\n%s", slot.Format(time.RFC3339), stderr())
		}
		if time.Now().After(slot.Add(frozenBound)) {
			t.Fatalf("no run of slot %s committed within %s of it\n%s", slot.Format(time.RFC3339), frozenBound, stderr())
		}
		time.Sleep(5 * time.Millisecond)
	}
	var victim *proc
	serve := ppid(ppid(first.pid)) // the shell's supervisor's parent
	for _, p := range ps {
		if p.cmd.Process.Pid == serve {
			victim = p
		}
	}
	if victim == nil {
		t.Fatalf("the job's shell %d has grandparent %d, no replica\n%s", first.pid, serve, stderr())
	}
	if err := victim.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozenAt := time.Now()
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			_ = victim.cmd.Process.Signal(syscall.SIGCONT)
		}
	}
	t.Cleanup(thaw) // before the replicas' own cleanups kill them
	// The command still runs (its sleep), so its end, and the run's, cannot
	// have been recorded before the freeze.
	if !processAlive(first.pid) {
		t.Fatalf("the job's command ended before its replica was frozen; the freeze came too late to test anything")
	}
	if first.lease != "job:payouts" || first.attempt != 1 {
		t.Fatalf("first run %+v, want lease job:payouts at attempt 1", first)
	}
	t.Logf("slot %s: generation %d committed its effect on replica pid %d; frozen", slot.Format(time.RFC3339), first.generation, serve)

	// Frozen for frozenFor at least, and until the slot has its final
	// attempts: the lease expires meanwhile and the other replicas scan.
	for {
		alive()
		st := slotState(t, pool, schema, slot)
		if st.attempts > wantAttempts {
			t.Fatalf("slot at attempt %d while replica %d was frozen, want %d at most; effects %d\n%s", st.attempts, serve, wantAttempts, effects(t, pool, schema, slot), stderr())
		}
		if time.Since(frozenAt) >= frozenFor && st.attempts == wantAttempts && st.status == "completed" {
			if !st.leaseExpired {
				t.Fatalf("lease %s (generation %d) not expired after %s frozen: the freeze tested nothing", first.lease, st.leaseGeneration, time.Since(frozenAt))
			}
			if resumed := st.leaseGeneration != first.generation; resumed != (wantAttempts > 1) {
				t.Fatalf("lease %s at generation %d after the freeze, the frozen run's %d: taken over %t, want %t", first.lease, st.leaseGeneration, first.generation, resumed, wantAttempts > 1)
			}
			t.Logf("after %s frozen: slot %s by generation %d, attempt %d; lease at generation %d, expired", time.Since(frozenAt).Round(time.Millisecond), st.status, st.generation, st.attempts, st.leaseGeneration)
			break
		}
		if time.Since(frozenAt) > frozenFor+frozenBound {
			t.Fatalf("after %s frozen: slot %s at attempt %d, want completed at attempt %d; effects %d\n%s",
				time.Since(frozenAt).Round(time.Millisecond), st.status, st.attempts, wantAttempts, effects(t, pool, schema, slot), stderr())
		}
		time.Sleep(50 * time.Millisecond)
	}
	thaw()

	// Thawed, the replica records its run's end (or that it was taken over).
	deadline := time.Now().Add(frozenBound)
	for runsOf(t, pool, schema, slot, first.generation) == 0 {
		alive()
		if time.Now().After(deadline) {
			t.Fatalf("the thawed replica recorded no run of generation %d within %s\n%s", first.generation, frozenBound, stderr())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, p := range ps {
		stopServe(t, p)
	}

	st := slotState(t, pool, schema, slot)
	if n := effects(t, pool, schema, slot); n != wantEffects {
		t.Errorf("effects of slot %s committed: %d, want %d", slot.Format(time.RFC3339), n, wantEffects)
	}
	if st.status != "completed" || st.attempts != wantAttempts {
		t.Errorf("slot %s at attempt %d, want completed at attempt %d", st.status, st.attempts, wantAttempts)
	}
	lines := slotLines(marker)
	if len(lines) != wantAttempts {
		t.Errorf("runs that committed (marker lines): %q, want %d", lines, wantAttempts)
	}
	// The run rows: no attempt ran on the frozen replica but the first. The
	// first's row is not judged: whether it reads success or "interrupted
	// by lease loss" depends on which the thawed replica saw first, its
	// lease's expiry or its command's exit; the slot row is the truth.
	rows, err := pool.Query(ctx, `SELECT attempt, generation, owner, success, error FROM `+schema+`.runs WHERE job = 'payouts' AND slot = $1 ORDER BY id`, slot)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var attempt int
		var gen int64
		var owner, runErr string
		var success bool
		if err := rows.Scan(&attempt, &gen, &owner, &success, &runErr); err != nil {
			t.Fatal(err)
		}
		t.Logf("run row: attempt %d generation %d owner %s success %t error %q", attempt, gen, owner, success, runErr)
		if attempt > 1 && strings.Contains(owner, fmt.Sprintf(":%d:", serve)) {
			t.Errorf("attempt %d ran on the frozen replica %d", attempt, serve)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// markerLine is one line of the job's marker file.
type markerLine struct {
	pid        int
	lease      string
	generation int64
	attempt    int
}

func parseMarker(t *testing.T, line string) markerLine {
	t.Helper()
	f := strings.Fields(line)
	if len(f) != 4 {
		t.Fatalf("marker line %q, want PID LEASE GENERATION ATTEMPT", line)
	}
	return markerLine{pid: int(atoi(t, f[0])), lease: f[1], generation: atoi(t, f[2]), attempt: int(atoi(t, f[3]))}
}

// frozenSlot is the slot's row and its lease's, read together.
type frozenSlot struct {
	status          string // "" before the claim
	generation      int64
	attempts        int
	leaseGeneration int64
	leaseExpired    bool
}

func slotState(t *testing.T, pool *pgxpool.Pool, schema string, slot time.Time) frozenSlot {
	t.Helper()
	var st frozenSlot
	err := pool.QueryRow(context.Background(), `
SELECT coalesce(s.status, ''), coalesce(s.generation, 0), coalesce(s.attempts, 0),
       coalesce(l.generation, 0), coalesce(l.expires_at < now(), false)
  FROM (SELECT 1) one
  LEFT JOIN `+schema+`.slots s ON s.job = 'payouts' AND s.slot = $1
  LEFT JOIN `+schema+`.leases l ON l.name = 'job:payouts'`, slot).
		Scan(&st.status, &st.generation, &st.attempts, &st.leaseGeneration, &st.leaseExpired)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// effects counts the slot's committed payouts.
func effects(t *testing.T, pool *pgxpool.Pool, schema string, slot time.Time) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM `+schema+`.payouts WHERE slot = $1`, slot).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// runsOf counts the run rows of one generation of the slot.
func runsOf(t *testing.T, pool *pgxpool.Pool, schema string, slot time.Time, gen int64) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM `+schema+`.runs WHERE job = 'payouts' AND slot = $1 AND generation = $2`, slot, gen).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
