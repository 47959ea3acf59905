package cronfence

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/mysql"
	"github.com/cronfence/cronfence/store/postgres"
	"github.com/cronfence/cronfence/store/sqlite"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"
)

func TestEverySlotOnceAcrossThreeReplicas(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		l := newLedger()
		job := Job{Name: "tick", Schedule: "* * * * * *", Handler: l.handler(c.db)}
		start := c.db.Now()
		for i := range 3 {
			c.start(fmt.Sprintf("replica-%d", i), 0, job)
		}
		c.advance(time.Minute, time.Second)
		defer func() {
			if t.Failed() {
				dumpRuns(t, c.replicas[0].e.Store, "tick")
			}
		}()
		l.wantEachOnce(t, "tick", start.Add(time.Second), start.Add(time.Minute+time.Second), time.Second)
		c.wantNeverDown()
	})
}

func TestManyJobsEverySlotOnce(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		l := newLedger()
		var jobs []Job
		for i := range 200 {
			jobs = append(jobs, Job{Name: fmt.Sprintf("job-%03d", i), Schedule: "* * * * * *", Handler: l.handler(c.db)})
		}
		start := c.db.Now()
		for i := range 3 {
			c.start(fmt.Sprintf("replica-%d", i), 0, jobs...)
		}
		// A minute on PostgreSQL; ten seconds on SQLite, whose pure-Go
		// driver under the race detector needs three minutes for the
		// 12,000 runs of a minute (one host is not where 200 jobs a second
		// belong anyway).
		d := time.Minute
		if c.kind == "sqlite" {
			d = 10 * time.Second
		}
		c.advance(d, time.Second)
		for _, j := range jobs {
			l.wantEachOnce(t, j.Name, start.Add(time.Second), start.Add(d+time.Second), time.Second)
		}
		c.wantNeverDown()
	})
}

func TestShutdownReleasesLeaseAndHandsOver(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		b := newBlocker()
		job := Job{Name: "long", Schedule: "* * * * *", Handler: b.handler}
		s, err := New(Config{Store: c.open(t), Owner: "leaving", Logger: quiet, Clock: offsetClock{c.db, 0}, Retention: -1, ShutdownGrace: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Register(job); err != nil {
			t.Fatal(err)
		}
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		c.waitForTimers(1) // the loop's, after its first tick
		c.db.Advance(time.Minute)
		run := <-b.started
		// The deploy's deadline passes during the grace, before the
		// handler gives up by itself: Stop cancels it, and it still
		// finishes and releases.
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan error)
		go func() { stopped <- s.Stop(ctx) }()
		<-s.loop.done
		c.waitForTimers(2) // the lease's renewal and the grace
		cancel()
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
		l, err := s.e.Store.LeaseGet(context.Background(), "job:long")
		if err != nil || l.Generation != run.Generation || l.ExpiresAt.After(c.db.Now()) {
			t.Fatalf("after Stop the lease is %+v (%v); want generation %d released", l, err, run.Generation)
		}
	})
}

// A handler that does not end by itself is cancelled when the shutdown
// grace passes, and its run still ends with the lease released.
func TestShutdownGraceCancelsStuckHandler(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		b := newBlocker()
		s := c.startWith(Config{Owner: "leaving", Clock: offsetClock{c.db, 0}, Retention: -1, ShutdownGrace: 30 * time.Second},
			Job{Name: "long", Schedule: "* * * * *", Handler: b.handler})
		c.db.Advance(time.Minute)
		run := <-b.started
		stopped := make(chan error)
		go func() { stopped <- s.Stop(context.Background()) }()
		<-s.loop.done // firing has stopped; the grace timer starts next
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.db.WaitForTimers(ctx, 2); err != nil { // the lease's renewal and the grace
			t.Fatal(err)
		}
		select {
		case <-stopped:
			t.Fatal("Stop returned before the grace passed while a handler ran")
		default:
		}
		c.db.Advance(30 * time.Second)
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
		l, err := s.e.Store.LeaseGet(context.Background(), "job:long")
		if err != nil || l.Generation != run.Generation || l.ExpiresAt.After(c.db.Now()) {
			t.Fatalf("after Stop the lease is %+v (%v); want generation %d released", l, err, run.Generation)
		}
		runs, err := s.e.Store.RunList(context.Background(), store.RunListParams{Job: "long"})
		if err != nil || len(runs) != 1 || runs[0].Success || !strings.Contains(runs[0].Error, "interrupted by shutdown") {
			t.Fatalf("run rows = %+v, %v; want one run, interrupted by the shutdown", runs, err)
		}
		// The slot was left running for a live replica to resume at once.
		c.replicas = nil
		b2 := newBlocker()
		close(b2.release)
		c.start("staying", 0, Job{Name: "long", Schedule: "* * * * *", Handler: b2.handler})
		c.advance(time.Second, time.Second)
		resumed := <-b2.started
		if !resumed.Slot.Equal(run.Slot) || resumed.Attempt != 2 {
			t.Fatalf("resumed run = %+v; want slot %s attempt 2", resumed, run.Slot)
		}
	})
}

// A program that stops on SIGTERM cancels the context it ran under and
// then calls Stop, often with that same context (defer sched.Stop(ctx)).
// A context already ended when Stop is called is not a deadline for it:
// the running handler keeps its context for the shutdown grace and
// finishes, and its run is recorded as a success, not cut short.
func TestStopWithACancelledContextGivesRunningHandlersTheGrace(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		b := newBlocker()
		s := c.startWith(Config{Owner: "leaving", Clock: offsetClock{c.db, 0}, Retention: -1, ShutdownGrace: 30 * time.Second},
			Job{Name: "long", Schedule: "* * * * *", Handler: b.handler})
		c.db.Advance(time.Minute)
		run := <-b.started
		c.settleHolding(1)

		ctx, cancel := context.WithCancel(context.Background())
		cancel() // SIGTERM arrived: the program's context is done
		stopped := make(chan error, 1)
		go func() { stopped <- s.Stop(ctx) }()
		<-s.loop.done // firing has stopped; Stop now waits for the handler
		timers := make(chan error, 1)
		wait, done := context.WithTimeout(context.Background(), 30*time.Second)
		defer done()
		go func() { timers <- c.db.WaitForTimers(wait, 2) }() // the lease's renewal and the grace
		select {
		case err := <-stopped:
			runs, _ := s.e.Store.RunList(context.Background(), store.RunListParams{Job: "long"})
			t.Fatalf("Stop(an ended context) returned (%v) at once, cancelling the running handler instead of giving it the grace; run rows: %+v", err, runs)
		case err := <-timers:
			if err != nil {
				t.Fatalf("Stop set no grace timer: %v", err)
			}
		}
		c.db.Advance(29 * time.Second) // inside the grace
		select {
		case err := <-stopped:
			t.Fatalf("Stop(an ended context) returned (%v) while the handler ran, inside the grace", err)
		default:
		}
		close(b.release) // the handler finishes by itself
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
		runs, err := s.e.Store.RunList(context.Background(), store.RunListParams{Job: "long"})
		if err != nil || len(runs) != 1 || !runs[0].Success || runs[0].Generation != run.Generation {
			t.Fatalf("run rows = %+v, %v; want the one run, successful: Stop with an ended context cancelled it instead of giving it the grace", runs, err)
		}
	})
}

// hostileStores opens a fresh, migrated store of each kind, and a way to
// run raw SQL on it (for breaking it on purpose).
var hostileStores = []struct {
	name string
	open func(t *testing.T) (store.Store, func(sql string) error)
}{
	{"sqlite", func(t *testing.T) (store.Store, func(string) error) {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cronfence.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		if err := s.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		return s, func(q string) error { _, err := s.DB().Exec(q); return err }
	}},
	{"postgres", func(t *testing.T) (store.Store, func(string) error) {
		pool, schema := pgtest.Schema(t)
		s, err := postgres.New(pool, &postgres.Config{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		return s, func(q string) error {
			_, err := pool.Exec(context.Background(), strings.ReplaceAll(q, "cronfence_", pgx.Identifier{schema}.Sanitize()+"."))
			return err
		}
	}},
}

// Start refuses a database with a table dropped by hand or migrated by a
// newer binary, with an error saying which, promptly.
func TestHostileStartBrokenSchema(t *testing.T) {
	t.Parallel()
	for _, kind := range hostileStores {
		for _, tc := range []struct {
			name, breakSQL, want string
			is                   error
		}{
			{"missing table", `DROP TABLE cronfence_runs`, "runs", nil},
			{"foreign version", `INSERT INTO cronfence_schema_migrations (version, applied_at) VALUES (99, 0)`, "99", store.ErrSchemaTooNew},
		} {
			t.Run(kind.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				st, exec := kind.open(t)
				q := tc.breakSQL
				if kind.name == "postgres" {
					q = strings.ReplaceAll(q, "(version, applied_at) VALUES (99, 0)", "(version, name) VALUES (99, 'future')")
				}
				if err := exec(q); err != nil {
					t.Fatal(err)
				}
				s, err := New(Config{Store: st, Logger: quiet})
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Register(Job{Name: "nightly", Schedule: "@daily", Handler: func(context.Context, *Run) error { return nil }}); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				err = s.Start(ctx)
				if err == nil {
					_ = s.Stop(context.Background())
					t.Fatal("Start succeeded")
				}
				if ctx.Err() != nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
					t.Fatalf("Start: %v, want an error naming %q", err, tc.want)
				}
			})
		}
	}
}

// The absence checks provoked for real on three replicas over both stores,
// with time moved by hand: each alert must be raised once and resolved once
// across the cluster, seen both as AlertEvents (counted on every replica's
// Observer) and as rows in the store.

// alertKey names one alert.
type alertKey struct {
	kind    store.AlertKind
	subject string
}

// alertLog counts the AlertEvents of every replica.
type alertLog struct {
	mu       sync.Mutex
	raised   map[alertKey][]string // the replicas that reported raising it
	resolved map[alertKey][]string
	again    map[alertKey][]store.AlertAck // the acknowledgements ended by a change, as reported
}

func newAlertLog() *alertLog {
	return &alertLog{raised: map[alertKey][]string{}, resolved: map[alertKey][]string{}, again: map[alertKey][]store.AlertAck{}}
}

// observer is the Observer of replica owner.
func (l *alertLog) observer(owner string) Observer {
	return ObserverFunc(func(e Event) {
		ev, ok := e.(AlertEvent)
		if !ok {
			return
		}
		k := alertKey{ev.Alert.Kind, ev.Alert.Subject}
		l.mu.Lock()
		defer l.mu.Unlock()
		switch {
		case ev.Raised && !ev.EndedAck.IsZero():
			l.again[k] = append(l.again[k], ev.EndedAck)
		case ev.Raised:
			l.raised[k] = append(l.raised[k], owner)
		default:
			l.resolved[k] = append(l.resolved[k], owner)
		}
	})
}

func (l *alertLog) counts(k alertKey) (raised, resolved int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.raised[k]), len(l.resolved[k])
}

// wantOnly checks that exactly the alerts in want were raised, as often as
// each says (and resolved as often as each says), and nothing else; slack
// names alerts that may have been raised along the way as a side effect,
// provided each was raised and resolved at most once.
func (l *alertLog) wantOnly(t *testing.T, want map[alertKey][2]int, slack ...alertKey) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := map[alertKey]bool{}
	for k := range l.raised {
		keys[k] = true
	}
	for k := range l.resolved {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	for k := range keys {
		got := [2]int{len(l.raised[k]), len(l.resolved[k])}
		if w, ok := want[k]; ok {
			if got != w {
				t.Errorf("%s %s: raised %d times (by %v), resolved %d times (by %v); want %d and %d",
					k.kind, k.subject, got[0], l.raised[k], got[1], l.resolved[k], w[0], w[1])
			}
			continue
		}
		isSlack := false
		for _, s := range slack {
			isSlack = isSlack || s == k
		}
		if !isSlack || got[0] > 1 || got[1] > got[0] {
			t.Errorf("unexpected alert %s %s: raised by %v, resolved by %v", k.kind, k.subject, l.raised[k], l.resolved[k])
		}
	}
}

// monitored is a cluster of replicas whose alerts are counted.
type monitored struct {
	*cluster
	log *alertLog
	mon store.Monitor // a store of its own, for the test's reads

	held, heldTimers int // see hold
}

func newMonitored(t *testing.T, c *cluster) *monitored {
	st := c.open(t)
	m := &monitored{cluster: c, log: newAlertLog(), mon: st}
	t.Cleanup(func() {
		if t.Failed() {
			m.dumpAlerts()
		}
	})
	return m
}

// start starts a replica with the default monitoring settings, on clk (nil:
// the cluster's clock).
func (m *monitored) start(name string, clk Clock, jobs ...Job) *Scheduler {
	m.t.Helper()
	if clk == nil {
		clk = offsetClock{m.db, 0}
	}
	return m.startWith(Config{Owner: name, Clock: clk, Retention: -1, Observer: m.log.observer(name)}, jobs...)
}

// hold says what settled looks like while handlers are deliberately
// blocked: busy of them, keeping timers timers (a renewal each, and one
// more while a job's timeout is pending).
func (m *monitored) hold(busy, timers int) { m.held, m.heldTimers = busy, timers }

// settle waits until every replica is idle but for the held handlers.
func (m *monitored) settle() { m.t.Helper(); m.settleHeld(m.held, m.heldTimers) }

// advanceUntil advances time in steps until cond holds, failing after
// limit.
func (m *monitored) advanceUntil(what string, limit, step time.Duration, cond func() bool) {
	m.t.Helper()
	for passed := time.Duration(0); !cond(); passed += step {
		if passed >= limit {
			m.t.Fatalf("%s: not within %s (now %s)", what, limit, m.db.Now().Format(time.TimeOnly))
		}
		m.db.Advance(step)
		m.settle()
	}
}

// advance advances d in steps.
func (m *monitored) advance(d, step time.Duration) {
	m.t.Helper()
	for ; d > 0; d -= step {
		m.db.Advance(min(step, d))
		m.settle()
	}
}

func (m *monitored) raised(k alertKey) bool   { r, _ := m.log.counts(k); return r > 0 }
func (m *monitored) resolved(k alertKey) bool { _, r := m.log.counts(k); return r > 0 }

// wantRows checks the store's rows of k: exactly one alert, open or not.
func (m *monitored) wantRows(k alertKey, open bool) store.Alert {
	m.t.Helper()
	rows, err := m.mon.AlertList(context.Background(), store.AlertListParams{Kind: k.kind, Subject: k.subject})
	if err != nil {
		m.t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Open() != open {
		m.t.Fatalf("%s %s: %d alert rows (%+v), want one, open=%v", k.kind, k.subject, len(rows), rows, open)
	}
	return rows[0]
}

// wantResolvedOnce advances until k is resolved (failing after limit), then
// a minute more, and checks that k was raised once and resolved once: one
// row, closed, and one event of each across the replicas.
// Alerts of the slack keys may come and go meanwhile (see alertLog.wantOnly).
func (m *monitored) wantResolvedOnce(k alertKey, limit time.Duration, slack ...alertKey) {
	m.t.Helper()
	m.advanceUntil(string(k.kind)+" resolved", limit, time.Second, func() bool { return m.resolved(k) })
	m.advance(time.Minute, time.Second)
	m.wantRows(k, false)
	m.log.wantOnly(m.t, map[alertKey][2]int{k: {1, 1}}, slack...)
}

func (m *monitored) dumpAlerts() {
	rows, _ := m.mon.AlertList(context.Background(), store.AlertListParams{})
	for _, a := range rows {
		m.t.Logf("alert %d %s %s by %s raised %s resolved %s: %s %v", a.ID, a.Kind, a.Subject, a.RaisedBy,
			a.RaisedAt.Format(time.TimeOnly), a.ResolvedAt.Format(time.TimeOnly), a.Message, a.Details)
	}
}

// TestAlerts: each absence (G9) is provoked for real on three replicas,
// and its alert raised once across them and resolved once.
func TestAlerts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		test func(t *testing.T)
	}{
		{"DeadlineMissedRaisedOnceAndResolved", testAlertDeadlineMissedRaisedOnceAndResolved},
		{"SkipStreakRaisedOnceAndResolved", testAlertSkipStreakRaisedOnceAndResolved},
		{"SlowRunRaisedOnceAndResolved", testAlertSlowRunRaisedOnceAndResolved},
		{"ConfigDriftRaisedOnceAndResolved", testAlertConfigDriftRaisedOnceAndResolved},
		{"AcknowledgedStaysSilentUntilItChanges", testAlertAcknowledgedStaysSilentUntilItChanges},
		{"OrphanJobRaisedWhenItsOnlyReplicaDied", testAlertOrphanJobRaisedWhenItsOnlyReplicaDied},
		{"OrphanJobNotRaisedForARetiredJob", testAlertOrphanJobNotRaisedForARetiredJob},
		{"OrphanJobNotRaisedForLockSlotsOrAnotherApp", testAlertOrphanJobNotRaisedForLockSlotsOrAnotherApp},
		{"ClockOffsetRaisedOnceAndResolved", testAlertClockOffsetRaisedOnceAndResolved},
		{"LeaseStuckUnrenewedRaisedOnceAndResolved", testAlertLeaseStuckUnrenewedRaisedOnceAndResolved},
		{"LeaseStuckPastOneLeaseListAnswer", testAlertLeaseStuckPastOneLeaseListAnswer},
		{"LeaseStuckHeldTooLongRaisedOnceAndResolved", testAlertLeaseStuckHeldTooLongRaisedOnceAndResolved},
		{"FailingSeesAStreakPastTheFirstRows", testAlertFailingSeesAStreakPastTheFirstRows},
		{"FailingRaisedOnceAndResolved", testAlertFailingRaisedOnceAndResolved},
	} {
		t.Run(tc.name, tc.test)
	}
}

// A job whose handler starts failing stops completing its slots: the first
// slot not completed by its deadline raises deadline_missed, once across
// the replicas, and the first slot completed again after the handler
// recovers resolves it.
func testAlertDeadlineMissedRaisedOnceAndResolved(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		m := newMonitored(t, c)
		var failing atomic.Bool
		// One attempt a slot: a retry would be running at the deadline.
		job := Job{Name: "report", Schedule: "@every 1m", Deadline: 30 * time.Second, MaxAttempts: 1,
			Handler: func(ctx context.Context, run *Run) error {
				if failing.Load() {
					return errors.New("the report service is down")
				}
				return nil
			}}
		for i := range 3 {
			m.start(fmt.Sprintf("replica-%d", i), nil, job)
		}
		key := alertKey{store.AlertDeadlineMissed, "report"}
		// Healthy for three minutes: several passes, no alert.
		m.advance(3*time.Minute, time.Second)
		m.log.wantOnly(t, nil)

		failing.Store(true) // from the slot of 12:04 on
		m.advanceUntil("deadline_missed raised", 2*time.Minute, time.Second, func() bool { return m.raised(key) })
		if now := m.db.Now(); now.Before(time.Date(2026, 3, 1, 12, 4, 30, 0, time.UTC)) {
			t.Fatalf("raised at %s, before the deadline of the first failed slot (12:04:30)", now.Format(time.TimeOnly))
		}
		a := m.wantRows(key, true)
		if a.Details["status"] != string(store.SlotFailed) {
			t.Errorf("details %v, want status failed", a.Details)
		}
		// Slots keep failing: the alert stays open, raised once.
		m.advance(3*time.Minute, time.Second)
		m.wantRows(key, true)

		failing.Store(false)
		// Three failed slots raise failing too (TestAlerts/FailingRaisedOnceAndResolved).
		m.wantResolvedOnce(key, 2*time.Minute, alertKey{store.AlertFailing, "report"})
		c.wantNeverDown()
	})
}

// A handler that blocks for longer than several intervals makes its job
// skip slot after slot: more than three skips in a row raise skip_streak,
// and the first run after the handler returns resolves it.
func testAlertSkipStreakRaisedOnceAndResolved(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		m := newMonitored(t, c)
		release := make(chan struct{})
		var first atomic.Bool
		job := Job{Name: "sync", Schedule: "@every 10s", Handler: func(ctx context.Context, run *Run) error {
			if first.CompareAndSwap(false, true) {
				<-release
			}
			return nil
		}}
		for i := range 3 {
			m.start(fmt.Sprintf("replica-%d", i), nil, job)
		}
		t.Cleanup(func() {
			select {
			case <-release:
			default:
				close(release)
			}
		})
		m.advance(9*time.Second, time.Second)
		m.hold(1, 1) // from the run of 12:00:10 on: blocked, its lease renewed
		m.advance(time.Second, time.Second)
		key := alertKey{store.AlertSkipStreak, "sync"}
		m.advanceUntil("skip_streak raised", 2*time.Minute, time.Second, func() bool { return m.raised(key) })
		if a := m.wantRows(key, true); a.Details["reason"] != "already_executing" {
			t.Errorf("details %v, want reason already_executing", a.Details)
		}
		m.advance(30*time.Second, time.Second)
		m.wantRows(key, true)

		close(release)
		m.hold(0, 0)
		m.advanceUntil("skip_streak resolved", time.Minute, time.Second, func() bool { return m.resolved(key) })
		m.advance(time.Minute, time.Second)
		m.wantRows(key, false)
		// The blocked run lasted far more than half of its 10 s interval:
		// slow_run may be raised by a pass that sees it as the latest run,
		// and is resolved by the next fast one.
		m.log.wantOnly(t, map[alertKey][2]int{key: {1, 1}}, alertKey{store.AlertSlowRun, "sync"})
		c.wantNeverDown()
	})
}

// Runs of a job every minute that last 40 s, more than half the interval
// but short of a skip, raise slow_run once across the replicas, with the
// slot, the duration and the interval in its details; a second slow run
// refreshes those details without raising it again, and the next run,
// fast again, resolves it.
func testAlertSlowRunRaisedOnceAndResolved(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		m := newMonitored(t, c)
		release := make(chan struct{})
		var slow atomic.Bool
		job := Job{Name: "export", Schedule: "@every 1m", Handler: func(ctx context.Context, run *Run) error {
			if slow.Load() {
				<-release
			}
			return nil
		}}
		for i := range 3 {
			m.start(fmt.Sprintf("replica-%d", i), nil, job)
		}
		t.Cleanup(func() { close(release) })
		key := alertKey{store.AlertSlowRun, "export"}
		at := func(hms string) time.Time {
			v, err := time.Parse(time.TimeOnly, hms)
			if err != nil {
				t.Fatal(err)
			}
			return time.Date(2026, 3, 1, v.Hour(), v.Minute(), v.Second(), 0, time.UTC)
		}
		// slowRun advances to the slot at hms and makes its run last 40 s;
		// the alert must stay as it was while the run is in progress.
		slowRun := func(hms string) {
			t.Helper()
			m.advance(at(hms).Add(-time.Second).Sub(c.db.Now()), time.Second)
			raised, resolved := m.log.counts(key)
			m.hold(1, 1) // the run blocks, its lease renewed
			m.advance(time.Second, time.Second)
			m.advance(40*time.Second, time.Second)
			if r, s := m.log.counts(key); r != raised || s != resolved {
				t.Fatalf("slow_run raised %d and resolved %d times during the run of %s, before %d and %d", r, s, hms, raised, resolved)
			}
			release <- struct{}{}
			m.hold(0, 0)
			m.settle()
		}
		slotOf := func() string { return m.wantRows(key, true).Details["slot"] }

		// Healthy for three minutes: the runs of 12:01 and 12:02 take no
		// time.
		m.advance(3*time.Minute-time.Second, time.Second)
		m.log.wantOnly(t, nil)

		slow.Store(true)
		slowRun("12:03:00")
		m.advanceUntil("slow_run raised", DefaultCheckEvery+time.Second, time.Second, func() bool { return m.raised(key) })
		a := m.wantRows(key, true)
		if want := (map[string]string{"slot": "2026-03-01T12:03:00Z", "duration": "40s", "interval": "1m0s"}); a.Details["slot"] != want["slot"] ||
			a.Details["duration"] != want["duration"] || a.Details["interval"] != want["interval"] || a.Details["owner"] == "" {
			t.Errorf("details %v, want %v and the run's owner", a.Details, want)
		}

		// The run of 12:04 is slow too: the open alert moves on to it.
		slowRun("12:04:00")
		slow.Store(false)
		m.advanceUntil("slow_run refreshed for 12:04", DefaultCheckEvery+time.Second, time.Second, func() bool {
			return slotOf() == "2026-03-01T12:04:00Z"
		})
		if r, _ := m.log.counts(key); r != 1 {
			t.Fatalf("slow_run raised %d times over two slow runs, want once", r)
		}

		// The run of 12:05 is fast: the next pass resolves the alert.
		m.advanceUntil("slow_run resolved", time.Minute, time.Second, func() bool { return m.resolved(key) })
		if now := c.db.Now(); now.Before(at("12:05:00")) {
			t.Fatalf("resolved at %s, before the next run (12:05)", now.Format(time.TimeOnly))
		}
		m.advance(time.Minute, time.Second)
		m.wantRows(key, false)
		m.log.wantOnly(t, map[alertKey][2]int{key: {1, 1}})
		c.wantNeverDown()
	})
}

// Two replicas register a job with one schedule and a third with another,
// as in a rolling deploy: config_drift is raised once, and resolved when
// the odd replica is stopped (its registry row goes with it).
func testAlertConfigDriftRaisedOnceAndResolved(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		m := newMonitored(t, c)
		noop := func(ctx context.Context, run *Run) error { return nil }
		m.start("replica-0", nil, Job{Name: "sync", Schedule: "@every 1m", Handler: noop})
		m.start("replica-1", nil, Job{Name: "sync", Schedule: "@every 1m", Handler: noop})
		odd := m.start("replica-2", nil, Job{Name: "sync", Schedule: "@every 2m", Handler: noop})
		key := alertKey{store.AlertConfigDrift, "sync"}
		m.advanceUntil("config_drift raised", time.Minute, time.Second, func() bool { return m.raised(key) })
		a := m.wantRows(key, true)
		if a.Details["replica-2"] == "" || a.Details["replica-0"] == a.Details["replica-2"] || a.Details["differences"] != "schedule" {
			t.Errorf("details %v: want each replica's hash and schedule, differing in the schedule", a.Details)
		}
		m.advance(time.Minute, time.Second)
		m.wantRows(key, true)

		m.stop(odd)
		m.wantResolvedOnce(key, 2*time.Minute)
	})
}

// An acknowledged alert stays silent while it only changes in measure,
// and is raised again, once across the replicas, when it reports another
// problem: here config_drift, acknowledged during a rolling deploy, stays
// silent while a drifting replica restarts with its settings, and comes
// back when a third version appears.
func testAlertAcknowledgedStaysSilentUntilItChanges(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		m := newMonitored(t, c)
		noop := func(ctx context.Context, run *Run) error { return nil }
		v := func(every string) Job { return Job{Name: "sync", Schedule: "@every " + every, Handler: noop} }
		m.start("replica-0", nil, v("1m"))
		odd := m.start("replica-1", nil, v("2m"))
		key := alertKey{store.AlertConfigDrift, "sync"}
		m.advanceUntil("config_drift raised", time.Minute, time.Second, func() bool { return m.raised(key) })
		a := m.wantRows(key, true)
		acked, err := m.mon.AlertAcknowledge(context.Background(), store.AlertAcknowledgeParams{
			Kind: key.kind, Subject: key.subject, ID: a.ID, By: "ops", Note: "rolling out every 2m"})
		if err != nil {
			t.Fatal(err)
		}

		// The odd replica restarts with the same settings: the alert's
		// details move on (another owner), its fingerprint does not.
		m.stop(odd)
		m.start("replica-2", nil, v("2m"))
		m.advance(2*time.Minute, time.Second)
		if got := m.wantRows(key, true); !got.Acknowledged() || got.Ack != acked.Ack || got.Details["replica-2"] == "" {
			t.Fatalf("after the restart: %+v; want the alert refreshed with replica-2, still acknowledged by ops", got)
		}
		m.log.wantOnly(t, map[alertKey][2]int{key: {1, 0}})
		if n := len(m.log.again[key]); n != 0 {
			t.Fatalf("raised again %d times while the alert stayed the same", n)
		}

		// A third version: another problem than the one acknowledged.
		m.start("replica-3", nil, v("3m"))
		m.advanceUntil("config_drift raised again", time.Minute, time.Second, func() bool {
			m.log.mu.Lock()
			defer m.log.mu.Unlock()
			return len(m.log.again[key]) > 0
		})
		m.advance(time.Minute, time.Second)
		if got := m.wantRows(key, true); got.Acknowledged() || got.ID != a.ID {
			t.Fatalf("after a third version: %+v; want alert %d open, no longer acknowledged", got, a.ID)
		}
		m.log.mu.Lock()
		again := m.log.again[key]
		m.log.mu.Unlock()
		if len(again) != 1 || again[0] != acked.Ack {
			t.Fatalf("raised again with ended acknowledgements %+v, want once, with %+v", again, acked.Ack)
		}
		m.log.wantOnly(t, map[alertKey][2]int{key: {1, 0}})
	})
}

// startDying starts a replica that leaves its registry row behind when it
// stops, as a process that died (kill -9, a lost host) leaves it: the row
// stays with its jobs, its heartbeat aging.
func (m *monitored) startDying(name string, jobs ...Job) *Scheduler {
	m.t.Helper()
	keepsRow := intercept(m.open(m.t))
	keepsRow.before = func(c *call) { c.skip = c.method == "ReplicaRemove" }
	return m.startWith(Config{Owner: name, Clock: offsetClock{m.db, 0}, Retention: -1, Observer: m.log.observer(name),
		Store: keepsRow}, jobs...)
}

// A job whose only replica died (its registry row left behind, its
// heartbeat lapsed) is an orphan until a replica registers it again.
func testAlertOrphanJobRaisedWhenItsOnlyReplicaDied(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		m := newMonitored(t, c)
		noop := func(ctx context.Context, run *Run) error { return nil }
		syncJob := Job{Name: "sync", Schedule: "@every 1m", Handler: noop}
		extra := Job{Name: "extra", Schedule: "@every 1m", Handler: noop}
		m.start("replica-0", nil, syncJob)
		m.start("replica-1", nil, syncJob)
		dead := m.startDying("replica-2", syncJob, extra)
		m.advance(90*time.Second, time.Second) // extra runs at 12:01
		m.stop(dead)
		key := alertKey{store.AlertOrphanJob, "extra"}
		m.advanceUntil("orphan_job raised", time.Minute, time.Second, func() bool { return m.raised(key) })
		if a := m.wantRows(key, true); !strings.Contains(a.Details["replicas"], "replica-2") || !strings.Contains(a.Message, "replica-2") {
			t.Errorf("orphan_job %q %v: want the dead replica named", a.Message, a.Details)
		}

		m.start("replica-3", nil, syncJob, extra)
		m.wantResolvedOnce(key, time.Minute)
	})
}

// A rolling deploy that drops one job and renames another: each old
// replica stops cleanly and a new one starts without them. Those jobs are
// retired, not orphaned: no alert at all, and their history stays.
func testAlertOrphanJobNotRaisedForARetiredJob(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		m := newMonitored(t, c)
		noop := func(ctx context.Context, run *Run) error { return nil }
		syncJob := Job{Name: "sync", Schedule: "@every 1m", Handler: noop}
		dropped := Job{Name: "extra", Schedule: "@every 1m", Handler: noop}
		report := Job{Name: "report", Schedule: "@every 1m", Handler: noop}
		renamed := Job{Name: "report-v2", Schedule: "@every 1m", Handler: noop}
		old := []*Scheduler{m.start("replica-0", nil, syncJob, dropped, report), m.start("replica-1", nil, syncJob, dropped, report)}
		m.advance(90*time.Second, time.Second) // extra and report run at 12:01
		for i, s := range old {
			m.stop(s)
			m.start(fmt.Sprintf("replica-%d-v2", i), nil, syncJob, renamed)
			m.advance(20*time.Second, time.Second)
		}
		m.advance(3*time.Minute, time.Second)
		m.log.wantOnly(t, nil)
		if rows, err := m.mon.AlertList(context.Background(), store.AlertListParams{}); err != nil || len(rows) != 0 {
			t.Fatalf("alerts after the deploy: %+v, %v; want none", rows, err)
		}
		for _, job := range []string{"extra", "report"} {
			if runs, err := c.open(t).RunList(context.Background(), store.RunListParams{Job: job}); err != nil || len(runs) == 0 {
				t.Errorf("the history of retired job %s: %d runs, %v; want it kept", job, len(runs), err)
			}
		}
	})
}

// Slots run by LockSlot (cronfence lock --schedule), paused or not, and the
// jobs of another application's replicas sharing the schema, are nobody's
// orphans: no replica of this application registers them, and none ever
// should.
func testAlertOrphanJobNotRaisedForLockSlotsOrAnotherApp(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		m := newMonitored(t, c)
		noop := func(ctx context.Context, run *Run) error { return nil }
		m.start("app-a-0", nil, Job{Name: "sync", Schedule: "@every 1m", Handler: noop})
		other := m.start("app-b-0", nil, Job{Name: "billing", Schedule: "@every 1m", Handler: noop})
		st := c.open(t)
		lockLine := func(name string) {
			t.Helper()
			l := SlotLock{Name: name, Schedule: "@every 1m", Owner: "cron-host:1:" + name, Clock: offsetClock{c.db, 0}, EarlyGrace: -1, Logger: quiet}
			if _, err := LockSlot(context.Background(), st, l, func(ctx context.Context, run *Run) error { return nil }); err != nil {
				t.Fatalf("LockSlot %s: %v", name, err)
			}
		}
		off := false
		if _, err := st.JobStateSet(context.Background(), store.JobStateSetParams{Job: "paused-backup", Enabled: &off, By: "ops"}); err != nil {
			t.Fatal(err)
		}
		for range 4 {
			m.advance(time.Minute, time.Second)
			lockLine("backup")
			lockLine("paused-backup")
		}
		// The other application is deployed anew: its replica stops
		// cleanly and comes back with its job renamed.
		m.stop(other)
		m.start("app-b-1", nil, Job{Name: "billing-v2", Schedule: "@every 1m", Handler: noop})
		m.advance(3*time.Minute, time.Second)
		lockLine("backup")
		m.advance(time.Minute, time.Second)
		m.log.wantOnly(t, nil)
		if runs, err := st.RunList(context.Background(), store.RunListParams{Job: "backup"}); err != nil || len(runs) < 4 {
			t.Fatalf("backup's lock runs: %d, %v; want one a minute", len(runs), err)
		}
	})
}

// skewClock is the cluster clock seen by a replica whose clock can be set
// off, and back, while it runs.
type skewClock struct {
	base   *clock.Fake
	offset atomic.Int64
}

func (s *skewClock) Now() time.Time                       { return s.base.Now().Add(time.Duration(s.offset.Load())) }
func (s *skewClock) NewTimer(d time.Duration) clock.Timer { return s.base.NewTimer(d) }

// A replica whose clock runs three minutes ahead raises clock_offset with
// itself as the subject; once its clock is set right, its next measurement
// and heartbeat resolve it.
func testAlertClockOffsetRaisedOnceAndResolved(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		m := newMonitored(t, c)
		job := Job{Name: "sync", Schedule: "@every 1m", Handler: func(ctx context.Context, run *Run) error { return nil }}
		m.start("replica-0", nil, job)
		m.start("replica-1", nil, job)
		skewed := &skewClock{base: c.db}
		skewed.offset.Store(int64(3 * time.Minute))
		m.start("replica-2", skewed, job)
		key := alertKey{store.AlertClockOffset, "replica-2"}
		m.advanceUntil("clock_offset raised", time.Minute, time.Second, func() bool { return m.raised(key) })
		if a := m.wantRows(key, true); a.Details["offset"] != "3m0s" {
			t.Errorf("details %v, want offset 3m0s", a.Details)
		}
		m.advance(time.Minute, time.Second)
		m.wantRows(key, true)

		skewed.offset.Store(0)
		// The next measurement is due a ClockCheckEvery after the last, on
		// the replica's clock, which just went back three minutes.
		m.wantResolvedOnce(key, 6*time.Minute)
		c.wantNeverDown()
	})
}

// A process that took a job's lease and stopped renewing it (as a paused
// owner would) raises lease_stuck once two renewals are missed, and the
// lease's expiry resolves it.
func testAlertLeaseStuckUnrenewedRaisedOnceAndResolved(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) { testLeaseStuckUnrenewed(t, c, 0) })
}

// The monitor reads the held job leases in one answer of at most
// store.MaxRunListLimit; with that many held by jobs whose names sort
// first, "sync"'s lease is past the answer, read on its own, and still
// judged.
func testAlertLeaseStuckPastOneLeaseListAnswer(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) { testLeaseStuckUnrenewed(t, c, store.MaxRunListLimit) })
}

// testLeaseStuckUnrenewed is the unrenewed lease_stuck case, with crowd
// other job leases ("job:a0000"…, unregistered) held for the whole test.
func testLeaseStuckUnrenewed(t *testing.T, c *cluster, crowd int) {
	m := newMonitored(t, c)
	job := Job{Name: "sync", Schedule: "@every 1m", Handler: func(ctx context.Context, run *Run) error { return nil }}
	for i := range 3 {
		m.start(fmt.Sprintf("replica-%d", i), nil, job)
	}
	m.advance(5*time.Second, time.Second)
	intruder := c.open(t)
	holdLeases(t, intruder, c.db.Now(), crowd, "job:a%04d", "crowd", time.Hour)
	l, ok, err := intruder.LeaseAcquire(context.Background(), store.LeaseAcquireParams{Name: "job:sync", Owner: "paused-owner", TTL: DefaultLeaseTTL})
	if err != nil || !ok {
		t.Fatalf("take the job's lease: acquired %v, %v", ok, err)
	}
	if crowd > 0 {
		// The crowd is held, and fills the monitor's answer of held job
		// leases before the job's own (its names sort first).
		held, err := intruder.LeaseList(context.Background(), store.LeaseListParams{Prefix: "job:", Limit: crowd})
		if err != nil || len(held.Leases) != crowd || held.Leases[crowd-1].Name >= "job:sync" {
			t.Fatalf("held job leases: %d, %v; want the %d of the crowd first", len(held.Leases), err, crowd)
		}
	}
	key := alertKey{store.AlertLeaseStuck, "sync"}
	m.advanceUntil("lease_stuck raised", 2*time.Minute, time.Second, func() bool { return m.raised(key) })
	if unrenewed := c.db.Now().Sub(l.RenewedAt); unrenewed <= 2*DefaultLeaseTTL/3 {
		t.Fatalf("raised after %s unrenewed, not more than 2/3 of the TTL", unrenewed)
	}
	if a := m.wantRows(key, true); a.Details["reason"] != "not_renewed" || a.Details["owner"] != "paused-owner" {
		t.Errorf("details %v, want reason not_renewed and owner paused-owner", a.Details)
	}
	m.advanceUntil("lease_stuck resolved", time.Minute, time.Second, func() bool { return m.resolved(key) })
	if !c.db.Now().After(l.ExpiresAt) {
		t.Fatalf("resolved at %s, before the lease expired at %s", c.db.Now().Format(time.TimeOnly), l.ExpiresAt.Format(time.TimeOnly))
	}
	m.advance(time.Minute, time.Second)
	m.wantRows(key, false)
	m.log.wantOnly(t, map[alertKey][2]int{key: {1, 1}})
}

// holdLeases writes n leases, named fmt.Sprintf(format, i), held by owner
// from now for ttl, as LeaseAcquire would take them, in one statement
// straight into st's table: taken one by one, 10,000 of them were most of
// a test's time.
func holdLeases(t *testing.T, st store.Store, now time.Time, n int, format, owner string, ttl time.Duration) {
	t.Helper()
	if n == 0 {
		return
	}
	rows := func(at func(time.Time) string) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "('"+format+"', '%s', 1, %s, %s, %s)", i, owner, at(now), at(now), at(now.Add(ttl)))
		}
		return b.String()
	}
	const columns = ` (name, owner, generation, acquired_at, renewed_at, expires_at) VALUES `
	var err error
	switch st := st.(type) {
	case *postgres.Store:
		_, err = st.Pool().Exec(context.Background(), `INSERT INTO `+pgx.Identifier{st.Schema(), "leases"}.Sanitize()+columns+
			rows(func(t time.Time) string { return "'" + t.UTC().Format(time.RFC3339Nano) + "'" }))
	case *sqlite.Store:
		_, err = st.DB().Exec(`INSERT INTO cronfence_leases` + columns +
			rows(func(t time.Time) string { return fmt.Sprint(t.UnixMicro()) }))
	case *mysql.Store:
		_, err = st.DB().Exec(`INSERT INTO ` + st.Prefix() + `leases` + columns +
			rows(func(t time.Time) string { return "'" + t.UTC().Format("2006-01-02 15:04:05.000000") + "'" }))
	default:
		t.Fatalf("store %T", st)
	}
	if err != nil {
		t.Fatalf("hold %d leases: %v", n, err)
	}
}

// A handler that ignores its context's cancellation at the job's timeout
// keeps the lease, renewed by its replica, for longer than the timeout:
// lease_stuck is raised once, and resolved when the handler returns.
func testAlertLeaseStuckHeldTooLongRaisedOnceAndResolved(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		m := newMonitored(t, c)
		release := make(chan struct{})
		job := Job{Name: "export", Schedule: "@every 10m", Timeout: 30 * time.Second, Handler: func(ctx context.Context, run *Run) error {
			<-release // ignores ctx
			return nil
		}}
		for i := range 3 {
			m.start(fmt.Sprintf("replica-%d", i), nil, job)
		}
		t.Cleanup(func() {
			select {
			case <-release:
			default:
				close(release)
			}
		})
		m.advance(10*time.Minute-time.Second, 5*time.Second)
		m.hold(1, 2) // the run of 12:10 blocks: its renewal and its timeout pending
		m.advance(time.Second, time.Second)
		started := c.db.Now()
		m.advance(29*time.Second, time.Second)
		m.hold(1, 1) // the timeout passed, ignored
		m.advance(time.Second, time.Second)
		key := alertKey{store.AlertLeaseStuck, "export"}
		m.advanceUntil("lease_stuck raised", 2*time.Minute, time.Second, func() bool { return m.raised(key) })
		if held := c.db.Now().Sub(started); held <= 30*time.Second+DefaultLeaseTTL/3 {
			t.Fatalf("raised after %s, not more than the timeout plus a renewal period", held)
		}
		if a := m.wantRows(key, true); a.Details["reason"] != "held_too_long" {
			t.Errorf("details %v, want reason held_too_long", a.Details)
		}
		m.advance(time.Minute, time.Second)
		m.wantRows(key, true)

		close(release)
		m.hold(0, 0)
		m.wantResolvedOnce(key, time.Minute)
	})
}

// One replica runs the checks, keeping the monitor lease from pass to pass;
// its Stop gives the lease up, and another replica takes the checks over at
// its next pass instead of after the lease's TTL. (On PostgreSQL the
// replica preferred for the checks runs them, notices.go: the first
// replica to start may hand them over once it hears of the second.)
func TestMonitorLeaseHeldAcrossPassesAndReleasedAtStop(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		m := newMonitored(t, c)
		job := Job{Name: "sync", Schedule: "@every 1m", Handler: func(ctx context.Context, run *Run) error { return nil }}
		a := m.start("replica-0", nil, job)
		b := m.start("replica-1", nil, job)
		st := c.open(t)
		lease := func() store.Lease {
			l, err := st.LeaseGet(context.Background(), MonitorLeaseName)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		m.advance(time.Minute, time.Second) // the replicas heard of each other
		first := lease()
		m.advance(time.Minute, time.Second)
		l := lease()
		if l.Generation != first.Generation || !l.RenewedAt.After(first.RenewedAt) {
			t.Fatalf("monitor lease %+v after a minute, first %+v: want the same generation, renewed", l, first)
		}
		holder, other := a, b
		if l.Owner == b.e.cfg.Owner {
			holder, other = b, a
		}
		m.stop(holder)
		if l := lease(); l.ExpiresAt.After(c.db.Now()) {
			t.Fatalf("monitor lease %+v still held after its holder stopped at %s", l, c.db.Now())
		}
		// The other replica tries at each of its passes, every CheckEvery.
		m.advanceUntil("the other replica takes the checks over", DefaultCheckEvery, time.Second, func() bool {
			return lease().Owner == other.e.cfg.Owner
		})
		if l := lease(); l.Generation != first.Generation+1 {
			t.Fatalf("monitor lease %+v after the stop: want generation %d", l, first.Generation+1)
		}
	})
}

// A failing streak longer than the rows every job's runs are first read
// by (monitorJobRuns): three slots of five failed attempts are fifteen
// rows, and the pass reads more of the jobs whose first rows hold no
// success, so failing is still raised, with all three.
func testAlertFailingSeesAStreakPastTheFirstRows(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		m := newMonitored(t, c)
		job := Job{Name: "export", Schedule: "@every 1m", MaxAttempts: 5, RetryBackoff: 2 * time.Second,
			Handler: func(ctx context.Context, run *Run) error { return errors.New("exit status 1") }}
		healthy := Job{Name: "report", Schedule: "@every 1m", Handler: func(ctx context.Context, run *Run) error { return nil }}
		m.start("replica-0", nil, job, healthy)
		key := alertKey{store.AlertFailing, "export"}
		m.advanceUntil("failing raised", 5*time.Minute, time.Second, func() bool { return m.raised(key) })
		a := m.wantRows(key, true)
		if d := a.Details; d["count"] != "3+" || d["attempts"] != "5" || d["first_slot"] != "2026-03-01T12:01:00Z" {
			t.Errorf("details %v; want 3 slots from 12:01, 5 attempts each", d)
		}
		if m.raised(alertKey{store.AlertFailing, "report"}) {
			t.Error("failing raised for a job whose runs succeed")
		}
	})
}

// A job that fails every attempt raises failing once across the replicas,
// when its third slot has spent its attempts (each retried after the
// backoff), and its first slot that succeeds again resolves it, once.
func testAlertFailingRaisedOnceAndResolved(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		m := newMonitored(t, c)
		var broken atomic.Bool
		broken.Store(true)
		job := Job{Name: "export", Schedule: "@every 1m", MaxAttempts: 2, RetryBackoff: 10 * time.Second,
			Handler: func(ctx context.Context, run *Run) error {
				if broken.Load() {
					return errors.New("exit status 1: bucket not found")
				}
				return nil
			}}
		for i := range 3 {
			m.start(fmt.Sprintf("replica-%d", i), nil, job)
		}
		key := alertKey{store.AlertFailing, "export"}
		// Slots 12:01, 12:02 and 12:03 fail, each attempt retried once
		// 10s later; the third's last attempt fails at 12:03:10.
		m.advanceUntil("failing raised", 5*time.Minute, time.Second, func() bool { return m.raised(key) })
		if now, spent := m.db.Now(), time.Date(2026, 3, 1, 12, 3, 10, 0, time.UTC); now.Before(spent) {
			t.Fatalf("raised at %s, before the third slot spent its attempts (%s)", now.Format(time.TimeOnly), spent.Format(time.TimeOnly))
		}
		a := m.wantRows(key, true)
		if d := a.Details; d["count"] != "3+" || d["attempts"] != "2" || d["first_slot"] != "2026-03-01T12:01:00Z" ||
			d["latest_slot"] != "2026-03-01T12:03:00Z" || d["last_error"] != "exit status 1: bucket not found" {
			t.Errorf("details %v; want 3 slots from 12:01 to 12:03, 2 attempts, the handler's error", d)
		}
		for _, slot := range []time.Time{time.Date(2026, 3, 1, 12, 1, 0, 0, time.UTC), time.Date(2026, 3, 1, 12, 2, 0, 0, time.UTC)} {
			if runs := slotRuns(t, m.replicas[0].e.Store, "export", slot); len(runs) != 2 || runs[0].Attempt != 1 || runs[1].Attempt != 2 ||
				runs[1].StartedAt.Sub(runs[0].FinishedAt) != 10*time.Second {
				t.Errorf("slot %s: runs %+v; want attempts 1 and 2, 10s apart", slot.Format(time.TimeOnly), runs)
			}
		}
		// Still failing: the alert stays open, raised once.
		m.advance(2*time.Minute, time.Second)
		m.wantRows(key, true)

		broken.Store(false)
		m.wantResolvedOnce(key, 2*time.Minute)
		c.wantNeverDown()
	})
}

// snapshotSpy records what the checks ask of MonitorSnapshot and what
// each replica's row came back as.
type snapshotSpy struct {
	mu      sync.Mutex
	known   []map[string]string // KnownJobs of each call
	digests []map[string]string // each call's answer: owner → JobsHash, where the store keeps one
	leftOut []map[string]bool   // each call's answer: owners whose jobs were left out
}

// calls returns how many snapshots were answered.
func (s *snapshotSpy) calls() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.known) }

// spyOnSnapshots is st recording its monitor snapshots.
func spyOnSnapshots(st store.Store) (*intercepted, *snapshotSpy) {
	spy := &snapshotSpy{}
	in := intercept(st)
	in.after = func(c *call) {
		if c.method != "MonitorSnapshot" || c.err != nil {
			return
		}
		res := c.result.(*store.MonitorSnapshot)
		digests, leftOut := map[string]string{}, map[string]bool{}
		for _, r := range res.Replicas {
			if r.JobsHash != "" {
				digests[r.Owner] = r.JobsHash
			}
			if r.JobsUnchanged {
				leftOut[r.Owner] = true
			}
		}
		spy.mu.Lock()
		spy.known = append(spy.known, maps.Clone(c.arg.(*store.MonitorSnapshotParams).KnownJobs))
		spy.digests = append(spy.digests, digests)
		spy.leftOut = append(spy.leftOut, leftOut)
		spy.mu.Unlock()
	}
	return in, spy
}

// The checks name the jobs they hold to the store at every pass after
// the first, so that PostgreSQL, which digests them, sends a replica's
// thousands of jobs only when they change. (The store's side is the
// conformance suite's; without this, a scheduler that never named them
// passed every test and read every replica's jobs every pass.)
func TestMonitorNamesTheJobsItHoldsToTheSnapshot(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		m := newMonitored(t, c)
		st, spy := spyOnSnapshots(c.open(t))
		noop := func(ctx context.Context, run *Run) error { return nil }
		m.startWith(Config{Owner: "replica-0", Clock: offsetClock{m.db, 0}, Retention: -1, Observer: m.log.observer("replica-0"), Store: st},
			Job{Name: "sync", Schedule: "@every 1m", Handler: noop})
		m.advanceUntil("three passes of the checks", 2*time.Minute, time.Second, func() bool { return spy.calls() >= 3 })

		spy.mu.Lock()
		defer spy.mu.Unlock()
		if len(spy.known[0]) != 0 {
			t.Errorf("the first pass named %v as known; it holds none yet", spy.known[0])
		}
		for i := 1; i < len(spy.known); i++ {
			if diff := cmp.Diff(spy.digests[i-1], spy.known[i], cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("pass %d named as known (-the digests the pass before read +named):\n%s", i+1, diff)
			}
		}
		if c.kind == "postgres" {
			if spy.digests[0]["replica-0"] == "" {
				t.Fatal("PostgreSQL returned no digest of the replica's jobs")
			}
			if !spy.leftOut[2]["replica-0"] {
				t.Error("the third pass read the replica's unchanged jobs again")
			}
		}
	})
}
