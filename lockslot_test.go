package cronfence

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// hosts are the cluster's stores seen as separate hosts running the same
// crontab line: each its own connections, each its own owner.
type lockHosts struct {
	c      *cluster
	stores map[string]store.Store
}

func newLockHosts(c *cluster, names ...string) *lockHosts {
	h := &lockHosts{c: c, stores: map[string]store.Store{}}
	for _, n := range names {
		h.stores[n] = c.open(c.t)
	}
	return h
}

// lock runs LockSlot on host with l (its Owner set to host) and fn.
func (h *lockHosts) lock(host string, l SlotLock, fn func(context.Context, *Run) error) (SlotLockResult, error) {
	h.c.t.Helper()
	l.Owner = host
	if l.Logger == nil {
		l.Logger = quiet
	}
	return LockSlot(context.Background(), h.stores[host], l, fn)
}

// counted is a function to lock that counts its runs and remembers the last.
type counted struct {
	n    atomic.Int32
	last atomic.Pointer[Run]
	err  error
}

func (c *counted) fn(_ context.Context, run *Run) error {
	c.n.Add(1)
	c.last.Store(run)
	return c.err
}

// TestLockSlotRunsOncePerSlot: three hosts run the same line within one
// slot, one after another (the case Lock alone gets wrong: each finds the
// lease free once the first released it). The first runs it; the others
// find the slot completed and say by whom. The next instant of the schedule
// is a new slot and runs again, once.
func TestLockSlotRunsOncePerSlot(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		hosts := newLockHosts(c, "host-a", "host-b", "host-c")
		l := SlotLock{Name: "report", Schedule: "0 * * * *"}
		c.db.Advance(20 * time.Minute) // 12:20, by the database clock
		slot := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

		var f counted
		res, err := hosts.lock("host-a", l, f.fn)
		if err != nil || !res.Ran || !res.Slot.Equal(slot) || res.Attempt != 1 || res.Status != store.SlotCompleted || res.Refusal != "" {
			t.Fatalf("host-a: %+v, %v; want it to run slot %s as attempt 1, completed", res, err, slot)
		}
		run := f.last.Load()
		if run.Job != "report" || !run.Slot.Equal(slot) || run.Lease != "job:report" || run.Owner != "host-a" ||
			run.Attempt != 1 || run.Generation != res.Generation || run.Generation < 1 || run.Origin != OriginScheduled ||
			run.IdempotencyKey() != "report/2026-03-01T12:00:00Z" {
			t.Errorf("the run: %+v (key %q); want job report, slot %s, lease job:report, owner host-a, attempt 1, generation %d, origin scheduled",
				run, run.IdempotencyKey(), slot, res.Generation)
		}
		for _, host := range []string{"host-b", "host-c"} {
			res, err := hosts.lock(host, l, f.fn)
			if err != nil || res.Ran || res.Refusal != store.ClaimCompleted || res.Holder != "host-a" ||
				!res.Slot.Equal(slot) || res.Status != store.SlotCompleted {
				t.Errorf("%s: %+v, %v; want slot %s refused, completed by host-a", host, res, err, slot)
			}
		}
		if n := f.n.Load(); n != 1 {
			t.Fatalf("ran %d times within one slot on three hosts, want once", n)
		}
		// The same claim row the scheduler keeps for a job named report.
		sl, err := hosts.stores["host-c"].SlotGet(context.Background(), "report", slot)
		if err != nil || sl.Status != store.SlotCompleted || sl.Owner != "host-a" || sl.LeaseName != "job:report" || sl.Attempts != 1 {
			t.Errorf("slot row %+v, %v; want completed by host-a under job:report, 1 attempt", sl, err)
		}

		c.db.Advance(40 * time.Minute) // 13:00: the next instant
		next := slot.Add(time.Hour)
		res, err = hosts.lock("host-b", l, f.fn)
		if err != nil || !res.Ran || !res.Slot.Equal(next) || res.Attempt != 1 {
			t.Fatalf("host-b at the next instant: %+v, %v; want it to run slot %s", res, err, next)
		}
		res, err = hosts.lock("host-a", l, f.fn)
		if err != nil || res.Ran || res.Refusal != store.ClaimCompleted || res.Holder != "host-b" || !res.Slot.Equal(next) {
			t.Errorf("host-a at the next instant: %+v, %v; want it refused, completed by host-b", res, err)
		}
		if n := f.n.Load(); n != 2 {
			t.Fatalf("ran %d times over two slots, want twice", n)
		}
		runs, err := hosts.stores["host-a"].RunList(context.Background(), store.RunListParams{Job: "report"})
		if err != nil || len(runs) != 2 || !runs[0].Success || runs[0].Owner != "host-b" || runs[1].Owner != "host-a" {
			t.Errorf("run rows %+v, %v; want host-b's and host-a's, both successful", runs, err)
		}
	})
}

// TestLockSlotAttempts: a failed run ends its slot failed and leaves it to
// the next host while attempts remain (MaxAttempts, 1 by default), which
// runs it as the next attempt; then no host runs it again.
func TestLockSlotAttempts(t *testing.T) {
	type step struct {
		host    string
		fail    bool
		ran     bool
		attempt int // the attempt it ran as, or the slot's attempts when refused
		refusal store.ClaimRefusal
		holder  string
		status  store.SlotStatus
	}
	tests := []struct {
		name        string
		maxAttempts int
		steps       []step
	}{
		{"one attempt by default", 0, []step{
			{"host-a", true, true, 1, "", "", store.SlotFailed},
			{"host-b", false, false, 1, store.ClaimAttemptsExhausted, "host-a", store.SlotFailed},
		}},
		{"the next host retries", 2, []step{
			{"host-a", true, true, 1, "", "", store.SlotFailed},
			{"host-b", false, true, 2, "", "", store.SlotCompleted},
			{"host-c", false, false, 2, store.ClaimCompleted, "host-b", store.SlotCompleted},
		}},
		{"out of attempts", 2, []step{
			{"host-a", true, true, 1, "", "", store.SlotFailed},
			{"host-b", true, true, 2, "", "", store.SlotFailed},
			{"host-c", false, false, 2, store.ClaimAttemptsExhausted, "host-b", store.SlotFailed},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eachStore(t, func(t *testing.T, c *cluster) {
				hosts := newLockHosts(c, "host-a", "host-b", "host-c")
				l := SlotLock{Name: "flaky", Schedule: "*/5 * * * *", MaxAttempts: tt.maxAttempts}
				c.db.Advance(2 * time.Minute)
				slot := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
				failure := errors.New("exit status 3")
				runs := 0
				for i, s := range tt.steps {
					var f counted
					if s.fail {
						f.err = failure
					}
					res, err := hosts.lock(s.host, l, f.fn)
					ran := f.n.Load() == 1
					runs += int(f.n.Load())
					switch {
					case s.fail && !errors.Is(err, failure):
						t.Errorf("step %d (%s): error %v, want the function's", i, s.host, err)
					case !s.fail && err != nil:
						t.Errorf("step %d (%s): error %v", i, s.host, err)
					}
					if res.Ran != s.ran || ran != s.ran || !res.Slot.Equal(slot) || res.Attempt != s.attempt ||
						res.Refusal != s.refusal || res.Holder != s.holder || res.Status != s.status {
						t.Errorf("step %d (%s): %+v (ran %v); want ran %v, attempt %d, refusal %q, holder %q, status %q",
							i, s.host, res, ran, s.ran, s.attempt, s.refusal, s.holder, s.status)
					}
					if ran && f.last.Load().Attempt != s.attempt {
						t.Errorf("step %d (%s): run.Attempt %d, want %d", i, s.host, f.last.Load().Attempt, s.attempt)
					}
				}
				if want := max(tt.maxAttempts, 1); runs != want {
					t.Errorf("ran %d times, want %d (the slot's attempts)", runs, want)
				}
			})
		})
	}
}

// TestLockSlotHeld: while a run holds the job's lease, another host's call
// for the same slot does not run and names the holder; a call for the next
// slot meets an overlap, recorded once as a skip naming the holder, as the
// scheduler records it (G7).
func TestLockSlotHeld(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		hosts := newLockHosts(c, "host-a", "host-b", "host-c")
		l := SlotLock{Name: "slow", Schedule: "* * * * *"}
		c.db.Advance(30 * time.Second) // 12:00:30
		slot := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

		started, release := make(chan *Run), make(chan struct{})
		done := make(chan error, 1)
		go func() {
			_, err := hosts.lock("host-a", l, func(ctx context.Context, run *Run) error {
				started <- run
				<-release
				return nil
			})
			done <- err
		}()
		run := <-started

		var f counted
		res, err := hosts.lock("host-b", l, f.fn)
		if err != nil || res.Ran || res.Refusal != store.ClaimHeld || res.Holder != "host-a" || res.Generation != run.Generation ||
			!res.Slot.Equal(slot) || res.Status != store.SlotRunning || res.Claim.Recorded != "" {
			t.Errorf("host-b during host-a's run: %+v, %v; want refused, held by host-a at generation %d, running", res, err, run.Generation)
		}

		c.db.Advance(time.Minute) // 12:01:30: the next slot, while host-a still runs
		res, err = hosts.lock("host-c", l, f.fn)
		if err != nil || res.Ran || res.Refusal != store.ClaimHeld || res.Holder != "host-a" ||
			!res.Slot.Equal(slot.Add(time.Minute)) || res.Status != store.SlotSkipped || res.Claim.Recorded != store.SlotSkipped ||
			!strings.Contains(strings.Join(res.Claim.SkipRun.Logs, "\n"), "host-a") {
			t.Errorf("host-c at the next slot: %+v, %v; want an overlap recorded skipped, naming host-a", res, err)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if n := f.n.Load(); n != 0 {
			t.Fatalf("a refused call ran %d times", n)
		}
	})
}

// TestLockSlotCompletesInItsTransaction: a function that completes its slot
// in the transaction of its own effect (Run.Complete) and then fails leaves
// the slot completed: no host runs it again, and the effect committed once.
// One that only fences its effect leaves the slot failed, and the next host
// (attempts permitting) writes the effect a second time.
func TestLockSlotCompletesInItsTransaction(t *testing.T) {
	for _, tt := range []struct {
		name     string
		complete bool
		status   store.SlotStatus // host-a's slot after its run
		refusal  store.ClaimRefusal
		effects  int
	}{
		{"completed with its effect: once", true, store.SlotCompleted, store.ClaimCompleted, 1},
		{"fenced only: run again", false, store.SlotFailed, "", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			eachStore(t, func(t *testing.T, c *cluster) {
				hosts := newLockHosts(c, "host-a", "host-b")
				fx := newEffects(t, hosts.stores["host-a"])
				l := SlotLock{Name: "close", Schedule: "0 0 * * *", MaxAttempts: 2}
				c.db.Advance(time.Hour)
				slot := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
				late := errors.New("failed after the commit")

				res, err := hosts.lock("host-a", l, func(ctx context.Context, run *Run) error {
					if err := fx.write(ctx, run, tt.complete); err != nil {
						return err
					}
					return late
				})
				if !errors.Is(err, late) || !res.Ran || res.Status != tt.status {
					t.Fatalf("host-a: %+v, %v; want its error and the slot %s", res, err, tt.status)
				}
				res, err = hosts.lock("host-b", l, func(ctx context.Context, run *Run) error {
					return fx.write(ctx, run, tt.complete)
				})
				if err != nil || res.Refusal != tt.refusal || res.Ran != (tt.refusal == "") {
					t.Fatalf("host-b: %+v, %v; want refusal %q", res, err, tt.refusal)
				}
				if n := fx.count(t, "close", slot); n != tt.effects {
					t.Fatalf("the effect committed %d times, want %d", n, tt.effects)
				}
			})
		})
	}
}

// TestLockSlotPaused: `cronfence pause NAME` (the job's override) reaches a
// locked line as it reaches the scheduler's job: the slot due while paused
// is settled skipped and not run, even after the resume; the next one runs.
func TestLockSlotPaused(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		hosts := newLockHosts(c, "host-a")
		st := hosts.stores["host-a"]
		l := SlotLock{Name: "paused", Schedule: "0 * * * *"}
		off := false
		if _, err := st.JobStateSet(context.Background(), store.JobStateSetParams{Job: "paused", Enabled: &off, By: "test"}); err != nil {
			t.Fatal(err)
		}
		var f counted
		res, err := hosts.lock("host-a", l, f.fn)
		if err != nil || res.Ran || res.Refusal != store.ClaimPaused || res.Status != store.SlotSkipped {
			t.Fatalf("paused: %+v, %v; want refused paused, the slot settled skipped", res, err)
		}
		if _, err := st.JobStateSet(context.Background(), store.JobStateSetParams{Job: "paused", By: "test"}); err != nil {
			t.Fatal(err)
		}
		if res, err := hosts.lock("host-a", l, f.fn); err != nil || res.Ran || res.Refusal != store.ClaimSkipped {
			t.Fatalf("resumed, same slot: %+v, %v; want refused skipped", res, err)
		}
		c.db.Advance(time.Hour)
		if res, err := hosts.lock("host-a", l, f.fn); err != nil || !res.Ran {
			t.Fatalf("resumed, next slot: %+v, %v; want it run", res, err)
		}
		if n := f.n.Load(); n != 1 {
			t.Fatalf("ran %d times, want once (the slot after the resume)", n)
		}
	})
}

// TestLockSlotAt: At picks the slot at or before it instead of now; a slot
// not yet due by the database clock is refused, whatever At says.
func TestLockSlotAt(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		hosts := newLockHosts(c, "host-a")
		var f counted
		l := SlotLock{Name: "at", Schedule: "0 * * * *", At: time.Date(2026, 3, 1, 10, 30, 0, 0, time.UTC)}
		res, err := hosts.lock("host-a", l, f.fn)
		if err != nil || !res.Ran || !res.Slot.Equal(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)) {
			t.Fatalf("At 10:30: %+v, %v; want slot 10:00 run", res, err)
		}
		l.At = time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC) // the database says 12:00
		res, err = hosts.lock("host-a", l, f.fn)
		if err != nil || res.Ran || res.Refusal != store.ClaimNotDue || !res.Slot.Equal(l.At) {
			t.Fatalf("At 13:00 at 12:00: %+v, %v; want refused not_due", res, err)
		}
		if n := f.n.Load(); n != 1 {
			t.Fatalf("ran %d times, want once", n)
		}
	})
}

// TestLockSlotEarlyHost: a host whose clock runs ahead of the database's
// starts the line a moment before the slot it means, by the database clock.
// Within EarlyGrace, that coming instant is the slot: the call waits for the
// database clock to reach it and runs it. Without the grace the host would
// claim the previous slot, completed long ago, and the slot it meant could
// run nowhere when every host runs ahead.
func TestLockSlotEarlyHost(t *testing.T) {
	for _, tt := range []struct {
		name  string
		grace time.Duration
		slot  time.Time
		ran   bool
	}{
		{"within the grace: the coming slot", 0, time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC), true},
		{"grace off: the previous slot", -1, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			eachStore(t, func(t *testing.T, c *cluster) {
				hosts := newLockHosts(c, "host-a", "host-b")
				l := SlotLock{Name: "hourly", Schedule: "0 * * * *"}
				// 12:00 ran on time.
				if res, err := hosts.lock("host-b", l, (&counted{}).fn); err != nil || !res.Ran {
					t.Fatalf("12:00: %+v, %v", res, err)
				}
				c.db.Advance(time.Hour - 1500*time.Millisecond) // 12:59:58.5 by the database clock
				l.Clock, l.EarlyGrace = c.db, tt.grace
				type answer struct {
					res SlotLockResult
					err error
				}
				var ranAt atomic.Pointer[time.Time]
				got := make(chan answer, 1)
				go func() {
					res, err := hosts.lock("host-a", l, func(_ context.Context, run *Run) error {
						now := c.db.Now()
						ranAt.Store(&now)
						return nil
					})
					got <- answer{res, err}
				}()
				if tt.grace >= 0 {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					if err := c.db.WaitForTimers(ctx, 1); err != nil {
						t.Fatal("LockSlot did not wait for the coming slot:", err)
					}
					c.db.Advance(1500 * time.Millisecond)
				}
				a := <-got
				if a.err != nil || a.res.Ran != tt.ran || !a.res.Slot.Equal(tt.slot) {
					t.Fatalf("%+v, %v; want slot %s, ran %v", a.res, a.err, tt.slot, tt.ran)
				}
				if at := ranAt.Load(); (at != nil) != tt.ran || at != nil && at.Before(tt.slot) {
					t.Fatalf("ran at %v, want ran %v, never before the slot %s by the database clock", at, tt.ran, tt.slot)
				}
			})
		})
	}
}

// TestLockSlotSharesTheSchedulersSlots: a slot the scheduler ran for a job
// is not run by LockSlot under the same name, and says which replica ran it.
func TestLockSlotSharesTheSchedulersSlots(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		l := newLedger()
		c.start("replica-1", 0, Job{Name: "shared", Schedule: "*/10 * * * *", Handler: l.handler(c.db)})
		c.advance(10*time.Minute, time.Minute) // 12:10 runs on the replica
		slot := time.Date(2026, 3, 1, 12, 10, 0, 0, time.UTC)
		if n := l.ran("shared", slot); n != 1 {
			t.Fatalf("the scheduler ran 12:10 %d times", n)
		}
		hosts := newLockHosts(c, "host-a")
		var f counted
		res, err := hosts.lock("host-a", SlotLock{Name: "shared", Schedule: "*/10 * * * *"}, f.fn)
		if err != nil || res.Ran || res.Refusal != store.ClaimCompleted || res.Holder != "replica-1" || !res.Slot.Equal(slot) {
			t.Fatalf("LockSlot after the scheduler: %+v, %v; want refused, completed by replica-1", res, err)
		}
	})
}

func TestLockSlotRefusesBadArguments(t *testing.T) {
	t.Parallel()
	fn := func(context.Context, *Run) error { return nil }
	good := SlotLock{Name: "x", Schedule: "* * * * *"}
	with := func(f func(*SlotLock)) SlotLock { l := good; f(&l); return l }
	tests := []struct {
		name  string
		store store.Store
		l     SlotLock
		fn    func(context.Context, *Run) error
		want  string
	}{
		{"nil store", nil, good, fn, "store"},
		{"nil function", intercept(nil), good, nil, "function"},
		{"no name", intercept(nil), with(func(l *SlotLock) { l.Name = "" }), fn, "job name"},
		{"long name", intercept(nil), with(func(l *SlotLock) { l.Name = strings.Repeat("n", MaxJobNameLength+1) }), fn, "at most 150 bytes"},
		{"no schedule", intercept(nil), with(func(l *SlotLock) { l.Schedule = "" }), fn, "schedule"},
		{"bad schedule", intercept(nil), with(func(l *SlotLock) { l.Schedule = "61 * * * *" }), fn, "minute"},
		{"never fires", intercept(nil), with(func(l *SlotLock) { l.Schedule = "0 0 30 2 *"; l.At = time.Now() }), fn, "never fires: day 30 never falls in February"},
		{"local zone", intercept(nil), with(func(l *SlotLock) { l.TimeZone = "Local" }), fn, `"Local"`},
		{"unknown zone", intercept(nil), with(func(l *SlotLock) { l.TimeZone = "Mars/Olympus" }), fn, "Mars/Olympus"},
		{"negative ttl", intercept(nil), with(func(l *SlotLock) { l.TTL = -time.Second }), fn, "TTL"},
		{"ttl too long", intercept(nil), with(func(l *SlotLock) { l.TTL = 1000 * time.Hour }), fn, "TTL"},
		{"negative attempts", intercept(nil), with(func(l *SlotLock) { l.MaxAttempts = -1 }), fn, "MaxAttempts"},
		{"bad owner", intercept(nil), with(func(l *SlotLock) { l.Owner = "a\x00b" }), fn, "owner"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := LockSlot(context.Background(), tt.store, tt.l, tt.fn)
			if !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), tt.want) || res.Ran {
				t.Fatalf("%+v, %v; want an invalid argument naming %q", res, err, tt.want)
			}
		})
	}
}

// TestLockSlotEndsADeadLastAttempt: the host running a slot's last attempt
// is killed before recording its end. No claim may run the slot again, and
// no scheduler registers a lock's job to end it: the next host to call ends
// it failed (once its lease has been dead for a TTL), so it does not stay
// running for good, and says so; a host after it finds it failed.
func TestLockSlotEndsADeadLastAttempt(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		hosts := newLockHosts(c, "host-b", "host-c")
		l := SlotLock{Name: "backup", Schedule: "*/5 * * * *", TTL: 30 * time.Second}
		slot := c.db.Now() // 12:00
		// host-a claims the slot and dies: nothing records its end.
		st := c.open(t)
		dead, err := st.SlotClaim(context.Background(), store.SlotClaimParams{
			Job: "backup", Slot: slot, LeaseName: "job:backup", Owner: "host-a", TTL: 30 * time.Second, MaxAttempts: 1})
		if err != nil || !dead.Claimed {
			t.Fatalf("host-a's claim = %+v, %v", dead, err)
		}
		c.db.Advance(2 * time.Minute) // its lease expired over a TTL ago

		var f counted
		res, err := hosts.lock("host-b", l, f.fn)
		if err != nil || res.Ran || f.n.Load() != 0 || res.Refusal != store.ClaimAttemptsExhausted || res.Status != store.SlotFailed {
			t.Fatalf("host-b = %+v, %v (ran %d); want refused, out of attempts, the slot ended failed", res, err, f.n.Load())
		}
		got, err := st.SlotGet(context.Background(), "backup", slot)
		if err != nil || got.Status != store.SlotFailed || got.FinishedAt.IsZero() {
			t.Fatalf("slot = %+v, %v; want failed", got, err)
		}
		runs, err := st.RunList(context.Background(), store.RunListParams{Job: "backup"})
		if err != nil || len(runs) != 1 || runs[0].Success || !strings.Contains(runs[0].Error, "died without recording its end") || runs[0].Owner != "host-a" {
			t.Fatalf("run rows = %+v, %v; want one failure under host-a saying its run died", runs, err)
		}
		res, err = hosts.lock("host-c", l, f.fn)
		if err != nil || res.Ran || res.Refusal != store.ClaimAttemptsExhausted || res.Status != store.SlotFailed {
			t.Fatalf("host-c = %+v, %v; want refused, the slot failed", res, err)
		}
		if runs, _ := st.RunList(context.Background(), store.RunListParams{Job: "backup"}); len(runs) != 1 {
			t.Fatalf("a second abandon wrote a run row: %+v", runs)
		}
	})
}

// TestLockSlotEarlyHostClaimsOnceAtTheSlot: a host whose clock runs ahead
// of the database's sleeps to the slot by its own clock, a little early by
// the database's; its one claim waits there for the slot, where it used to
// be refused not_due and sent again 100 ms later. Nothing runs before the
// slot by the database clock.
func TestLockSlotEarlyHostClaimsOnceAtTheSlot(t *testing.T) {
	for _, o := range storeOpeners {
		t.Run(o.name, func(t *testing.T) {
			t.Parallel()
			st := o.open(t, nil)(t) // the database's own clock
			ahead := clockAhead(st, 50*time.Millisecond)
			bound := boundDBClock(t, st)
			var started time.Time
			res, err := LockSlot(context.Background(), ahead, SlotLock{Name: "tick", Schedule: "* * * * * *", Owner: "host-a", Logger: quiet},
				func(context.Context, *Run) error { started = time.Now(); return nil })
			if err != nil || !res.Ran {
				t.Fatalf("LockSlot = %+v, %v; want run", res, err)
			}
			if n := ahead.count("SlotClaim"); n != 1 {
				t.Errorf("%d claims sent for one slot, want one", n)
			}
			bound.wantNotBefore(t, res.Slot, started)
			sl, err := st.SlotGet(context.Background(), "tick", res.Slot)
			if err != nil {
				t.Fatal(err)
			}
			if sl.StartedAt.Before(res.Slot) {
				t.Errorf("slot %s started at %s by the database clock: early", res.Slot.Format(time.RFC3339Nano), sl.StartedAt.Format(time.RFC3339Nano))
			}
		})
	}
}
