//go:build unix

package cronfence_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/internal/wait"
	"github.com/cronfence/cronfence/schedule"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
)

// The failover test runs a replica in a real process of its own (this test
// binary, re-executed with -test.run on TestFailoverReplicaProcess), kills
// it with SIGKILL in the middle of a run, and checks that another replica
// resumes the interrupted slot at once, through the dead process's liveness
// lock, instead of after the lease's TTL.
const (
	// failoverMarkerEnv, set only in the child, is the file its handler
	// writes when a run starts; the other variables configure the child.
	failoverMarkerEnv = "CRONFENCE_FAILOVER_MARKER"
	failoverSchemaEnv = "CRONFENCE_FAILOVER_SCHEMA"
	failoverSpecEnv   = "CRONFENCE_FAILOVER_SPEC"

	failoverJobName = "failover"

	// failoverTTL is the run's lease TTL: a replica that waited for the dead
	// owner's lease to expire would resume the slot only this long after
	// the child claimed it.
	failoverTTL = 2 * time.Minute

	// failoverBound is how soon after the kill the slot must have resumed.
	// A timing limit is the behaviour under test here: the requirement is
	// "within a second once the session is gone, not after the TTL". The
	// bound is ten times that second, to absorb a loaded CI machine running
	// -race, and still twelve times shorter than failoverTTL, so waiting out
	// the TTL can never pass.
	failoverBound = 10 * time.Second

	// failoverChildStart bounds the child's start-up until its handler runs:
	// exec, connecting, starting the scheduler and claiming the slot.
	failoverChildStart = 30 * time.Second
)

// failoverMarker is what the child's handler reports when its run starts.
type failoverMarker struct {
	Owner      string
	Slot       time.Time
	Attempt    int
	Generation int64
}

// failoverJob is the job both replicas register, as every replica must.
// Its schedule has a single slot a year, so the slot the child claims stays
// the job's latest for the whole test, and the catch-up of a replica that
// starts later claims that slot and no other.
func failoverJob(spec string, h cronfence.Handler) cronfence.Job {
	return cronfence.Job{
		Name: failoverJobName, Schedule: spec, Handler: h,
		LeaseTTL: failoverTTL, MaxAttempts: 3, CatchUpWindow: 10 * time.Minute,
	}
}

// TestFailoverKill9ResumesOnAnotherReplica: kill -9 of a replica in the
// middle of a run; the interrupted slot resumes on another replica as soon
// as the dead replica's database session is gone, not after the lease TTL,
// as attempt 2 under a higher generation, and the dead owner's lease
// cannot be renewed, fenced with or released any more.
func TestFailoverKill9ResumesOnAnotherReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts and kills a replica process")
	}
	// The survivor either runs already at the kill (its scan for
	// interrupted runs resumes the slot) or starts after it (its catch-up
	// does).
	t.Run("SurvivorAlreadyRunning", func(t *testing.T) { t.Parallel(); testFailover(t, true) })
	t.Run("SurvivorStartsAfter", func(t *testing.T) { t.Parallel(); testFailover(t, false) })
}

func testFailover(t *testing.T, survivorRunning bool) {
	ctx := context.Background()

	url := pgtest.URL(t)
	pool, schema := pgtest.Schema(t)
	st, err := postgres.New(pool, &postgres.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}

	// The slot S is a whole second just past on both the process clock
	// (which the schedulers' catch-up reads) and the database clock (which
	// refuses a slot that is not yet due). The spec names S's second,
	// minute, hour, day and month: a yearly schedule whose latest slot is S
	// for a year, so which slot each replica claims does not depend on when
	// it starts.
	dbNow, err := st.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slot := earliest(time.Now(), dbNow).UTC().Truncate(time.Second).Add(-time.Second)
	spec := fmt.Sprintf("%d %d %d %d %d *", slot.Second(), slot.Minute(), slot.Hour(), slot.Day(), int(slot.Month()))
	sched, err := schedule.Parse(spec, &schedule.Options{Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	if prev := sched.Prev(time.Now()); !prev.Equal(slot) {
		t.Fatalf("schedule %q: latest slot %s, want %s", spec, prev, slot)
	}

	// The job existed before S (catch-up never runs a slot from before a
	// job was first registered).
	if _, err := st.JobRegister(ctx, store.JobRegisterParams{Jobs: []string{failoverJobName}, Now: slot.Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	// The child replica claims S through its catch-up at start and blocks
	// in its handler.
	markerPath := filepath.Join(t.TempDir(), "started.json")
	child := startFailoverChild(t, url, schema, spec, markerPath)
	started := waitForMarker(t, child, markerPath)
	if !started.Slot.Equal(slot) || started.Attempt != 1 {
		t.Fatalf("child started slot %s attempt %d, want slot %s attempt 1", started.Slot, started.Attempt, slot)
	}
	claim, err := st.SlotGet(ctx, failoverJobName, slot)
	if err != nil {
		t.Fatal(err)
	}
	if claim.Status != store.SlotRunning || claim.Owner != started.Owner || claim.Generation != started.Generation || claim.Attempts != 1 {
		t.Fatalf("slot before the kill = %+v, want running, attempt 1, owner %s, generation %d", claim, started.Owner, started.Generation)
	}
	dead, err := st.LeaseGet(ctx, claim.LeaseName)
	if err != nil {
		t.Fatal(err)
	}
	if dead.Owner != started.Owner || dead.Generation != started.Generation {
		t.Fatalf("lease before the kill = %+v, want the child's at generation %d", dead, started.Generation)
	}

	// The survivor: another replica of the same job.
	type resumed struct {
		at         time.Time
		slot       time.Time
		attempt    int
		generation int64
		catchUp    bool
		owner      string
		ctxErr     error
	}
	runs := make(chan resumed, 3)
	finish := make(chan struct{})
	st2, err := postgres.New(pgtest.NewPool(t), &postgres.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	owner := "failover-survivor-" + cronfence.OwnerID()
	s, err := cronfence.New(cronfence.Config{
		Store: st2, Owner: owner, Logger: slog.New(slog.NewTextHandler(t.Output(), nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Register(failoverJob(spec, func(ctx context.Context, run *cronfence.Run) error {
		runs <- resumed{
			at: time.Now(), slot: run.Slot, attempt: run.Attempt, generation: run.Generation,
			catchUp: run.Origin == cronfence.OriginCatchUp, owner: run.Owner, ctxErr: ctx.Err(),
		}
		select {
		case <-finish:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	startSurvivor := func() {
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Stop(sctx); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() {
		select {
		case <-finish:
		default:
			close(finish)
		}
		stop()
	})

	if survivorRunning {
		startSurvivor() // S is running under a live owner: nothing to claim yet
	}

	// The child's liveness key, read before the kill: once its session is
	// gone a running survivor may take the lease over at once, and the row
	// then records the survivor's key.
	var liveKey *int64
	if err := pool.QueryRow(ctx, "SELECT live_key FROM "+pgx.Identifier{schema, "leases"}.Sanitize()+" WHERE name = $1",
		claim.LeaseName).Scan(&liveKey); err != nil {
		t.Fatal(err)
	}
	if liveKey == nil {
		t.Fatal("the child's lease records no liveness key: its liveness lock was not taken, so only the TTL frees the slot")
	}

	// kill -9, in the middle of the run.
	killedAt := time.Now()
	if err := child.kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed the child replica %s (and reaped it in %s)", started.Owner, time.Since(killedAt))

	// The server ends the dead process's sessions once it sees their
	// sockets closed, which frees its liveness lock. The premise of the
	// requirement ("when its session is gone") is awaited, not slept on:
	// a replica starting before that would find the lease still guarded.
	waitForSessionGone(t, pool, *liveKey, killedAt)
	t.Logf("the child's liveness lock was free %s after the kill", time.Since(killedAt))
	if !survivorRunning {
		startSurvivor()
	}

	var run resumed
	select {
	case run = <-runs:
	case <-time.After(failoverBound - time.Since(killedAt)):
		t.Fatalf("slot %s not resumed %s after the kill (lease TTL %s)", slot, failoverBound, failoverTTL)
	}
	took := run.at.Sub(killedAt)
	t.Logf("slot resumed %s after the kill (lease TTL %s)", took, failoverTTL)
	if took >= failoverBound {
		t.Errorf("slot resumed %s after the kill, want under %s (the lease TTL is %s)", took, failoverBound, failoverTTL)
	}
	// A survivor that starts after the kill resumes S through catch-up; one
	// already running, through its scan for interrupted runs.
	if !run.slot.Equal(slot) || run.attempt != 2 || run.owner != owner || run.catchUp == survivorRunning || run.generation <= started.Generation {
		t.Fatalf("resumed run: slot %s attempt %d owner %s catch-up %v generation %d; want slot %s attempt 2 owner %s catch-up %v generation above %d",
			run.slot, run.attempt, run.owner, run.catchUp, run.generation, slot, owner, !survivorRunning, started.Generation)
	}
	if run.ctxErr != nil {
		t.Errorf("resumed run's context already done at start: %v", run.ctxErr)
	}

	// While the survivor's run goes on, the dead owner can do no harm: the
	// lease is the survivor's at a higher generation, taken before the dead
	// lease's TTL ran out by the database clock, and the dead owner's
	// renewal, fence and release are refused.
	l, err := st.LeaseGet(ctx, claim.LeaseName)
	if err != nil {
		t.Fatal(err)
	}
	if l.Owner != owner || l.Generation != run.generation {
		t.Errorf("lease during the resumed run = %+v, want owner %s generation %d", l, owner, run.generation)
	}
	if !l.AcquiredAt.Before(dead.ExpiresAt) {
		t.Errorf("lease taken over at %s, not before the dead lease's expiry %s: the takeover waited for the TTL", l.AcquiredAt, dead.ExpiresAt)
	}
	if _, err := st.LeaseRenew(ctx, store.LeaseRenewParams{LeaseRef: dead.Ref(), TTL: failoverTTL}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("renewal by the dead owner: err = %v, want ErrLeaseLost", err)
	}
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		return st.LeaseFence(ctx, tx, dead.Name, dead.Generation)
	}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("fence at the dead owner's generation: err = %v, want ErrLeaseLost", err)
	}
	if released, err := st.LeaseRelease(ctx, dead.Ref()); err != nil || released {
		t.Errorf("release by the dead owner = %v, %v; want false, nil", released, err)
	}
	during, err := st.SlotGet(ctx, failoverJobName, slot)
	if err != nil {
		t.Fatal(err)
	}
	if during.Status != store.SlotRunning || during.Owner != owner || during.Generation != run.generation || during.Attempts != 2 {
		t.Errorf("slot during the resumed run = %+v, want running, attempt 2, owner %s, generation %d", during, owner, run.generation)
	}

	close(finish)
	stop()

	after, err := st.SlotGet(ctx, failoverJobName, slot)
	if err != nil {
		t.Fatal(err)
	}
	if after.Status != store.SlotCompleted || after.Owner != owner || after.Generation != run.generation || after.Attempts != 2 {
		t.Errorf("slot after the resumed run = %+v, want completed, attempt 2, owner %s, generation %d", after, owner, run.generation)
	}
	l, err = st.LeaseGet(ctx, claim.LeaseName)
	if err != nil {
		t.Fatal(err)
	}
	if l.Owner != owner || l.Generation != run.generation {
		t.Errorf("lease after the resumed run = %+v, want owner %s generation %d", l, owner, run.generation)
	}
	// The killed run never finished: the survivor recorded it as it found
	// it dead (whether resumed by its scan or claimed back by catch-up),
	// before the resumed run's own row.
	rows, err := st.RunList(ctx, store.RunListParams{Job: failoverJobName})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("run rows = %+v, want two: the killed run, interrupted, and the resumed run", rows)
	}
	if r := rows[0]; !r.Slot.Equal(slot) || r.Attempt != 2 || !r.Success || r.CatchUp == survivorRunning || r.Owner != owner || r.Generation != run.generation {
		t.Errorf("run row = %+v, want slot %s attempt 2, successful (catch-up %v) by %s at generation %d", r, slot, !survivorRunning, owner, run.generation)
	}
	if r := rows[1]; !r.Slot.Equal(slot) || r.Attempt != 1 || r.Success || r.Reason != store.ReasonInterrupted || r.Owner != started.Owner ||
		r.Generation != started.Generation || !strings.HasSuffix(r.Error, "("+store.DeadOwnerGone+")") {
		t.Errorf("run row = %+v, want slot %s attempt 1 by %s at generation %d, interrupted: its owner's process was gone", r, slot, started.Owner, started.Generation)
	}
	select {
	case r := <-runs:
		t.Errorf("a second run started: %+v", r)
	default:
	}
}

// TestFailoverReplicaProcess is the child replica of
// TestFailoverKill9ResumesOnAnotherReplica; run on its own it skips. It
// starts a scheduler whose catch-up claims the job's latest slot, writes a
// marker when the handler starts, and blocks until it is killed.
func TestFailoverReplicaProcess(t *testing.T) {
	markerPath := os.Getenv(failoverMarkerEnv)
	if markerPath == "" {
		t.Skip("the replica process of TestFailoverKill9ResumesOnAnotherReplica; runs only when started by it")
	}
	// The parent holds the other end of stdin: if it dies without killing
	// this process, stdin ends and so does this process.
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		fmt.Fprintln(os.Stderr, "failover child: the parent test is gone; exiting")
		os.Exit(3)
	}()

	st, err := postgres.New(pgtest.NewPool(t), &postgres.Config{Schema: os.Getenv(failoverSchemaEnv)})
	if err != nil {
		t.Fatal(err)
	}
	owner := cronfence.OwnerID()
	s, err := cronfence.New(cronfence.Config{
		Store: st, Owner: owner, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Register(failoverJob(os.Getenv(failoverSpecEnv), func(ctx context.Context, run *cronfence.Run) error {
		b, err := json.Marshal(failoverMarker{Owner: owner, Slot: run.Slot, Attempt: run.Attempt, Generation: run.Generation})
		if err == nil {
			// Written then renamed, so the parent never reads half a marker.
			tmp := markerPath + ".tmp"
			if err = os.WriteFile(tmp, b, 0o644); err == nil {
				err = os.Rename(tmp, markerPath)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "failover child: writing the marker:", err)
			os.Exit(2)
		}
		select {} // the work in progress when the process is killed
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {} // until killed
}

// failoverChild is the child replica process, in a process group of its own.
type failoverChild struct {
	cmd    *exec.Cmd
	out    *bytes.Buffer // its stdout and stderr; read only once it exited
	exited chan struct{} // closed when Wait returned
	err    error         // Wait's error, set before exited is closed

	once sync.Once
}

func startFailoverChild(t *testing.T, url, schema, spec, markerPath string) *failoverChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFailoverReplicaProcess$", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(),
		pgtest.EnvURL+"="+url, // the database this test uses, even a throwaway one
		failoverMarkerEnv+"="+markerPath,
		failoverSchemaEnv+"="+schema,
		failoverSpecEnv+"="+spec,
	)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c := &failoverChild{cmd: cmd, out: &bytes.Buffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = c.out, c.out
	if _, err := cmd.StdinPipe(); err != nil { // closed by Wait
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.err = cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		_ = c.kill()
		if t.Failed() {
			t.Logf("child replica output:\n%s", c.out)
		}
	})
	return c
}

// kill sends SIGKILL to the child's whole process group and waits for the
// child. It reports an error unless the child died of that SIGKILL and no
// process of its group survives. Only the first call kills.
func (c *failoverChild) kill() error {
	var err error
	c.once.Do(func() {
		pgid := c.cmd.Process.Pid // Setpgid: the child leads its own group
		select {
		case <-c.exited:
			err = fmt.Errorf("the child replica had exited before the kill: %v", c.err)
			return
		default:
		}
		if kerr := syscall.Kill(-pgid, syscall.SIGKILL); kerr != nil {
			err = fmt.Errorf("kill -9 of process group %d: %w", pgid, kerr)
		}
		<-c.exited
		var ee *exec.ExitError
		if !errors.As(c.err, &ee) {
			err = errors.Join(err, fmt.Errorf("child replica: Wait = %v, want death by SIGKILL", c.err))
		} else if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			err = errors.Join(err, fmt.Errorf("child replica ended with %v, want death by SIGKILL", c.err))
		}
		if kerr := syscall.Kill(-pgid, 0); !errors.Is(kerr, syscall.ESRCH) {
			err = errors.Join(err, fmt.Errorf("a process of the child's group %d survived the kill (kill 0: %v)", pgid, kerr))
		}
	})
	return err
}

// waitForMarker waits until the child's handler has started, failing early
// if the child exits.
func waitForMarker(t *testing.T, c *failoverChild, path string) failoverMarker {
	t.Helper()
	var m failoverMarker
	wait.For(t, failoverChildStart, func() bool {
		b, err := os.ReadFile(path)
		if err == nil {
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("marker %s: %v", b, err)
			}
			return true
		}
		if !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		select {
		case <-c.exited:
			t.Fatalf("the child replica exited before its run started: %v", c.err)
		default:
		}
		return false
	}, func() string {
		return fmt.Sprintf("the child replica's run did not start within %s", failoverChildStart)
	})
	return m
}

// waitForSessionGone waits until the liveness lock recorded with the lease
// is free, by the same transaction-level try-lock the store's claim uses:
// then the server has ended the killed process's session.
func waitForSessionGone(t *testing.T, pool *pgxpool.Pool, liveKey int64, killedAt time.Time) {
	t.Helper()
	wait.For(t, failoverBound-time.Since(killedAt), func() bool {
		var free bool
		if err := pool.QueryRow(context.Background(), "SELECT pg_try_advisory_xact_lock($1)", liveKey).Scan(&free); err != nil {
			t.Fatal(err)
		}
		return free
	}, func() string {
		return fmt.Sprintf("the killed child's liveness lock still held %s after the kill", failoverBound)
	})
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
