//go:build unix

package riverbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
)

// The kill tests run the enqueuing replica in a process of its own (this
// test binary, re-executed with -test.run=^TestHelperProcess$), stop it in
// the bridge's transaction or just after its commit, SIGKILL it there, and
// check that a second replica still gets each slot enqueued exactly once.
const (
	helperMarkerEnv = "RIVERBRIDGE_HELPER_MARKER" // set only in the child
	helperSchemaEnv = "RIVERBRIDGE_HELPER_SCHEMA"
	helperModeEnv   = "RIVERBRIDGE_HELPER_MODE" // "before" or "after" the commit

	killJobName = "enqueue"

	// childStart bounds the child's start until its first run reaches
	// the point of the kill.
	childStart = 30 * time.Second
)

// marker is what the child writes where it stops.
type marker struct {
	Owner string
	Slot  Slot
}

func TestKill(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts and kills a replica process")
	}
	t.Parallel()
	// Killed after its commit: the River job and the slot's completion
	// committed together; the slot is never run again.
	t.Run("AfterCommit", func(t *testing.T) { t.Parallel(); testKill(t, "after") })
	// Killed before its commit: neither committed; the slot is resumed,
	// attempt 2 enqueues it.
	t.Run("BeforeCommit", func(t *testing.T) { t.Parallel(); testKill(t, "before") })
}

func testKill(t *testing.T, mode string) {
	ctx := context.Background()
	b := setup(t)

	markerPath := filepath.Join(t.TempDir(), "marker.json")
	child := startChild(t, b.schema, mode, markerPath)
	m := waitForMarker(t, child, markerPath)
	if m.Slot.Attempt != 1 {
		t.Fatalf("child stopped at %+v, want attempt 1", m.Slot)
	}
	slot := m.Slot

	// What the database holds at the kill.
	claim, err := b.store.SlotGet(ctx, killJobName, slot.Time)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus, wantJobs := store.SlotRunning, 0
	if mode == "after" {
		wantStatus, wantJobs = store.SlotCompleted, 1
	}
	if claim.Status != wantStatus || countKey(b.riverJobs(t), slot.Key) != wantJobs {
		t.Fatalf("before the kill: slot %s is %s with %d River jobs, want %s with %d", slot.Key, claim.Status, countKey(b.riverJobs(t), slot.Key), wantStatus, wantJobs)
	}

	killedAt := time.Now()
	if err := child.kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed the child %s %s its commit of %s", m.Owner, mode, slot.Key)

	// The survivor, in this process, with River's workers.
	job, err := Job(testJob(killJobName), testConfig(b))
	if err != nil {
		t.Fatal(err)
	}
	startScheduler(t, b, job)

	// River works the killed slot's job (committed by the child, or by the
	// survivor's attempt 2) and two later slots the survivor enqueued.
	worked := b.worked.waitFor(t, 30*time.Second, "the killed slot and two later ones", func(slots []Slot) bool {
		return countWorked(slots, slot.Key) >= 1 && distinctAfter(slots, killJobName, slot.Time) >= 2
	})
	t.Logf("River worked the killed slot and two later ones %s after the kill", time.Since(killedAt))

	// By now the survivor has scanned for dead runs a few times
	// (ResumeEvery): the killed slot's attempts say whether it was run
	// again (a second enqueue would be hidden by the unique key).
	claim, err = b.store.SlotGet(ctx, killJobName, slot.Time)
	if err != nil {
		t.Fatal(err)
	}
	wantAttempts := 1
	if mode == "before" {
		wantAttempts = 2
	}
	if claim.Status != store.SlotCompleted || claim.Attempts != wantAttempts {
		t.Errorf("killed slot after the survivor = %+v, want completed after %d attempt(s)", claim, wantAttempts)
	}

	jobs := onePerSlot(t, b.riverJobs(t))
	j, ok := jobs[slot.Key]
	if !ok {
		t.Fatalf("no River job for the killed slot %s: %+v", slot.Key, jobs)
	}
	if j.Attempt != wantAttempts || !j.Slot.Equal(slot.Time) {
		t.Errorf("the killed slot's River job = %+v, want slot %s enqueued by attempt %d", j, slot.Time, wantAttempts)
	}
	if mode == "after" && j.Generation != slot.Generation {
		t.Errorf("the killed slot's River job has generation %d, want the child's %d", j.Generation, slot.Generation)
	}
	if mode == "before" && j.Generation <= slot.Generation {
		t.Errorf("the killed slot's River job has generation %d, want above the child's %d", j.Generation, slot.Generation)
	}
	if n := countWorked(worked, slot.Key); n != 1 {
		t.Errorf("River worked the killed slot's job %d times, want once", n)
	}
	for key, n := range workedPerKey(worked) {
		if n != 1 {
			t.Errorf("River worked slot %s %d times, want once", key, n)
		}
	}
}

func countKey(jobs []riverJob, key string) int {
	n := 0
	for _, j := range jobs {
		if j.Key == key {
			n++
		}
	}
	return n
}

func countWorked(slots []Slot, key string) int { return workedPerKey(slots)[key] }

func workedPerKey(slots []Slot) map[string]int {
	m := map[string]int{}
	for _, s := range slots {
		m[s.Key]++
	}
	return m
}

// TestHelperProcess is the enqueuing replica of TestKill.
func TestHelperProcess(t *testing.T) {
	markerPath := os.Getenv(helperMarkerEnv)
	if markerPath == "" {
		t.Skip("the replica process of TestKill; runs only when started by it")
	}
	// The parent holds our stdin open; when it dies, so do we.
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(3)
	}()
	ctx := context.Background()
	schema := os.Getenv(helperSchemaEnv)
	pool := pgtest.NewPool(t)
	st, err := postgres.New(pool, &postgres.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	client, err := insertClient(pool, schema+"_river")
	if err != nil {
		t.Fatal(err)
	}
	owner := "child-" + cronfence.OwnerID()
	stopHere := func(run *cronfence.Run) {
		b, err := json.Marshal(marker{Owner: owner, Slot: SlotOf(run)})
		if err == nil {
			tmp := markerPath + ".tmp"
			if err = os.WriteFile(tmp, b, 0o644); err == nil {
				err = os.Rename(tmp, markerPath)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper: writing the marker:", err)
			os.Exit(2)
		}
		select {} // until killed
	}
	cfg := Config[testArgs]{
		Pool: pool, Client: client,
		ArgsFunc: func(_ context.Context, run *cronfence.Run, slot Slot) (testArgs, error) {
			return testArgs{Slot: slot, Note: "from " + run.Owner}, nil
		},
	}
	mode := os.Getenv(helperModeEnv)
	if mode == "before" {
		cfg.beforeCommit = func(_ context.Context, run *cronfence.Run) { stopHere(run) }
	}
	job, err := Job(testJob(killJobName), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if mode == "after" {
		h := job.Handler
		job.Handler = func(ctx context.Context, run *cronfence.Run) error {
			if err := h(ctx, run); err != nil {
				return err
			}
			stopHere(run) // committed; the scheduler has not recorded the end
			return nil
		}
	}
	s, err := cronfence.New(cronfence.Config{Store: st, Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register(job); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {} // until killed
}

type child struct {
	cmd    *exec.Cmd
	out    *bytes.Buffer
	exited chan struct{}
	err    error
}

func startChild(t *testing.T, schema, mode, markerPath string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(),
		pgtest.EnvURL+"="+pgtest.URL(t),
		helperMarkerEnv+"="+markerPath,
		helperSchemaEnv+"="+schema,
		helperModeEnv+"="+mode,
	)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c := &child{cmd: cmd, out: &bytes.Buffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = c.out, c.out
	if _, err := cmd.StdinPipe(); err != nil {
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
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-c.exited
		if t.Failed() {
			t.Logf("child output:\n%s", c.out)
		}
	})
	return c
}

// kill SIGKILLs the child's process group and waits for its death.
func (c *child) kill() error {
	select {
	case <-c.exited:
		return fmt.Errorf("the child had exited before the kill: %v", c.err)
	default:
	}
	if err := syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		return err
	}
	<-c.exited
	var ee *exec.ExitError
	if ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus); !errors.As(c.err, &ee) || !ok || ws.Signal() != syscall.SIGKILL {
		return fmt.Errorf("child ended with %v, want death by SIGKILL", c.err)
	}
	return nil
}

func waitForMarker(t *testing.T, c *child, path string) marker {
	t.Helper()
	deadline := time.Now().Add(childStart)
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			var m marker
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("marker %s: %v", b, err)
			}
			return m
		}
		if !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		select {
		case <-c.exited:
			t.Fatalf("the child exited before its run stopped: %v\n%s", c.err, c.out)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child's run did not stop within %s", childStart)
		}
	}
}
