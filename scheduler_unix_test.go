//go:build unix

package cronfence

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/schedule"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
)

// The stuck-owner test with a real process: a replica process (this test
// binary re-executed on TestMonitorStuckOwnerProcess) claims a slot and
// blocks in its handler; the test freezes it with SIGSTOP, so its lease
// stops being renewed while its database session stays open (its liveness
// lock held: nothing tells the others it is gone). Two in-process replicas
// must raise lease_stuck once, a third of a TTL before the lease expires,
// and resolve it once the lease expired and was taken over.
const (
	stuckMarkerEnv = "CRONFENCE_STUCK_MARKER"
	stuckSchemaEnv = "CRONFENCE_STUCK_SCHEMA"
	stuckSpecEnv   = "CRONFENCE_STUCK_SPEC"
	stuckJobName   = "stuck"
	// stuckTTL: renewals every 5 s; lease_stuck from 10 s unrenewed; the
	// lease expires at 15 s, leaving the checks (every second) a 5 s
	// window on a loaded machine.
	stuckTTL = 15 * time.Second
)

// stuckConfig is every replica's monitoring configuration: checks and
// heartbeats every second, so the test runs in seconds of real time.
func stuckConfig(st store.Store, owner string, log *slog.Logger, obs Observer) Config {
	return Config{Store: st, Owner: owner, Logger: log, Observer: obs, CheckEvery: time.Second, HeartbeatEvery: time.Second}
}

// stuckJob is the job every replica registers: a yearly slot just past,
// run at start-up by catch-up, so the child claims it and the others find
// it claimed.
func stuckJob(spec string, h Handler) Job {
	return Job{Name: stuckJobName, Schedule: spec, Handler: h, LeaseTTL: stuckTTL, CatchUpWindow: 10 * time.Minute}
}

func TestAlertLeaseStuckBySIGSTOPRaisedOnceAndResolved(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts and freezes a replica process")
	}
	t.Parallel()
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
	dbNow, err := st.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A whole second past on both clocks; the spec's only slot in a year.
	earliest := time.Now()
	if dbNow.Before(earliest) {
		earliest = dbNow
	}
	slot := earliest.UTC().Truncate(time.Second).Add(-time.Second)
	spec := fmt.Sprintf("%d %d %d %d %d *", slot.Second(), slot.Minute(), slot.Hour(), slot.Day(), int(slot.Month()))
	if sched, err := schedule.Parse(spec, nil); err != nil || !sched.Prev(time.Now()).Equal(slot) {
		t.Fatalf("schedule %q: %v; want its latest slot at %s", spec, err, slot)
	}

	// The job existed before its slot (catch-up never runs a slot from
	// before a job was first registered).
	if _, err := st.JobRegister(ctx, store.JobRegisterParams{Jobs: []string{stuckJobName}, Now: slot.Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "started")
	child := startStuckChild(t, url, schema, spec, marker)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child replica did not start its run within 30s; output:\n%s", child.out())
		}
		time.Sleep(20 * time.Millisecond)
	}
	held, err := st.LeaseGet(ctx, "job:"+stuckJobName)
	if err != nil {
		t.Fatal(err)
	}

	// Two replicas of the same job, in this process, counting AlertEvents.
	alerts := newAlertLog()
	for i := range 2 {
		st2, err := postgres.New(pgtest.NewPool(t), &postgres.Config{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		owner := fmt.Sprintf("survivor-%d", i)
		s, err := New(stuckConfig(st2, owner, quiet, alerts.observer(owner)))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Register(stuckJob(spec, func(ctx context.Context, run *Run) error { return nil })); err != nil {
			t.Fatal(err)
		}
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Stop(context.Background()) })
	}
	// Let the child renew once more after the survivors started, so the
	// freeze comes mid-way between renewals, as it would in production.
	waitRenewed := time.Now().Add(2 * stuckTTL / 3)
	for {
		l, err := st.LeaseGet(ctx, held.Name)
		if err != nil {
			t.Fatal(err)
		}
		if l.Generation != held.Generation {
			t.Fatalf("the child's lease was taken over before the freeze: %+v", l)
		}
		if l.RenewedAt.After(held.RenewedAt) {
			held = l
			break
		}
		if time.Now().After(waitRenewed) {
			t.Fatalf("the child did not renew its lease within %s; output:\n%s", 2*stuckTTL/3, child.out())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := child.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.cmd.Process.Signal(syscall.SIGCONT) })

	key := alertKey{store.AlertLeaseStuck, stuckJobName}
	row := func() (store.Alert, bool) {
		rows, err := st.AlertList(ctx, store.AlertListParams{Kind: key.kind, Subject: key.subject})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) > 1 {
			t.Fatalf("%d lease_stuck alerts, want one: %+v", len(rows), rows)
		}
		if len(rows) == 0 {
			return store.Alert{}, false
		}
		return rows[0], true
	}
	waitFor := func(what string, limit time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(limit)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %s; child output:\n%s", what, limit, child.out())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor("lease_stuck raised", 2*stuckTTL, func() bool { _, ok := row(); return ok })
	a, _ := row()
	if a.Details["reason"] != "not_renewed" || a.Details["owner"] != held.Owner || a.Details["generation"] != fmt.Sprint(held.Generation) {
		t.Fatalf("alert details %v, want reason not_renewed, the child's owner %s and generation %d", a.Details, held.Owner, held.Generation)
	}
	if unrenewed := a.RaisedAt.Sub(held.RenewedAt); unrenewed <= 2*stuckTTL/3 || !a.RaisedAt.Before(held.ExpiresAt) {
		t.Fatalf("raised at %s, %s after the last renewal: want after 2/3 of the TTL and before the expiry at %s",
			a.RaisedAt, unrenewed, held.ExpiresAt)
	}
	// Expiry frees the lease; a survivor resumes the slot (attempt 2) and
	// completes it, and a later pass resolves the alert.
	waitFor("lease_stuck resolved", 2*stuckTTL, func() bool { a, _ := row(); return !a.Open() })
	a, _ = row()
	if a.ResolvedAt.Before(held.ExpiresAt) {
		t.Fatalf("resolved at %s, before the frozen lease expired at %s", a.ResolvedAt, held.ExpiresAt)
	}
	// The alert resolves once the lease is taken over, which can be a
	// moment before the survivor's run completes the slot.
	var claim store.Slot
	waitFor("the slot completed by a survivor", 2*stuckTTL, func() bool {
		var err error
		if claim, err = st.SlotGet(ctx, stuckJobName, slot); err != nil {
			t.Fatal(err)
		}
		return claim.Status == store.SlotCompleted
	})
	if claim.Owner == held.Owner {
		t.Errorf("slot after the freeze = %+v, want completed by a survivor", claim)
	}
	// Thawed, the child finds its lease lost: nothing more is raised.
	if err := child.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	var ended time.Time
	waitFor("the thawed child records its run's end", 2*stuckTTL, func() bool {
		runs, err := st.RunList(ctx, store.RunListParams{Job: stuckJobName})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if r.Owner == held.Owner && !r.FinishedAt.IsZero() {
				ended = r.FinishedAt
				return true
			}
		}
		return false
	})
	waitFor("two more passes of the checks", 2*stuckTTL, func() bool {
		l, err := st.LeaseGet(ctx, MonitorLeaseName)
		return err == nil && l.RenewedAt.After(ended.Add(time.Second))
	})
	row()
	alerts.wantOnly(t, map[alertKey][2]int{key: {1, 1}})
}

// TestMonitorStuckOwnerProcess is the child replica of
// TestAlertLeaseStuckBySIGSTOPRaisedOnceAndResolved; run on its own it
// skips. Its catch-up claims the job's slot; the handler writes the marker
// and blocks until the run's context ends (the lease lost).
func TestMonitorStuckOwnerProcess(t *testing.T) {
	marker := os.Getenv(stuckMarkerEnv)
	if marker == "" {
		t.Skip("the replica process of TestAlertLeaseStuckBySIGSTOPRaisedOnceAndResolved; runs only when started by it")
	}
	go func() { // the parent holds stdin: when it is gone, so is this process
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(3)
	}()
	st, err := postgres.New(pgtest.NewPool(t), &postgres.Config{Schema: os.Getenv(stuckSchemaEnv)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(stuckConfig(st, "frozen-"+OwnerID(), slog.New(slog.NewTextHandler(os.Stderr, nil)), nil))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Register(stuckJob(os.Getenv(stuckSpecEnv), func(ctx context.Context, run *Run) error {
		if err := os.WriteFile(marker, nil, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "stuck child: writing the marker:", err)
			os.Exit(2)
		}
		<-ctx.Done()
		return context.Cause(ctx)
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {} // until killed
}

// stuckChild is the child replica process.
type stuckChild struct {
	cmd    *exec.Cmd
	buf    *bytes.Buffer
	exited chan struct{}
}

// out is the child's output so far; complete only once it exited.
func (c *stuckChild) out() string {
	select {
	case <-c.exited:
		return c.buf.String()
	default:
		return "(still running)"
	}
}

func startStuckChild(t *testing.T, url, schema, spec, marker string) *stuckChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestMonitorStuckOwnerProcess$", "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), pgtest.EnvURL+"="+url, stuckMarkerEnv+"="+marker, stuckSchemaEnv+"="+schema, stuckSpecEnv+"="+spec)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c := &stuckChild{cmd: cmd, buf: &bytes.Buffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = c.buf, c.buf
	if _, err := cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(c.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		<-c.exited
		if t.Failed() {
			t.Logf("child replica output:\n%s", c.buf.String())
		}
	})
	return c
}
