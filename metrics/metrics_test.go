package metrics_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/internal/scrape"
	"github.com/cronfence/cronfence/internal/wait"
	"github.com/cronfence/cronfence/metrics"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
	"github.com/cronfence/cronfence/store/sqlite"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// openers build each store instrumented the way serve does: on
// PostgreSQL the pool's tracer times queries, on SQLite the wrapper times
// calls. The database clock is pinned to the test's fake clock. other
// opens another, plain store on the same database, as another replica's.
var openers = []struct {
	name string
	open func(t *testing.T, c *metrics.Collector, now func() time.Time) (st store.Store, other func() store.Store)
}{
	{"postgres", func(t *testing.T, c *metrics.Collector, now func() time.Time) (store.Store, func() store.Store) {
		_, schema := pgtest.Schema(t)
		cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
		if err != nil {
			t.Fatal(err)
		}
		cfg.ConnConfig.Tracer = c.QueryTracer()
		pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		s, err := postgres.New(pool, &postgres.Config{Schema: schema, NowFunc: now})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		other := func() store.Store {
			s, err := postgres.New(pgtest.NewPool(t), &postgres.Config{Schema: schema, NowFunc: now})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		return c.InstrumentStore(s, false), other
	}},
	{"sqlite", func(t *testing.T, c *metrics.Collector, now func() time.Time) (store.Store, func() store.Store) {
		path := filepath.Join(t.TempDir(), "cronfence.db")
		open := func() *sqlite.Store {
			s, err := sqlite.Open(context.Background(), path, &sqlite.Config{NowFunc: now})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		}
		s := open()
		if err := s.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		return c.InstrumentStore(s, true), func() store.Store { return open() }
	}},
}

// eventually polls cond (in-memory metrics and database round trips,
// never a timer) until it holds, failing after 20 seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	wait.For(t, 20*time.Second, cond, func() string { return "for " + what })
}

// A real scheduler on each store runs three minutes of three jobs; the
// /metrics page it serves passes promlint (promtool check metrics) and its
// values are what happened: 3 successes of "ok", 1 failure and 2
// successes of "flaky", 2 runs and 1 skip of "long", a fire latency per
// scheduled run, the lease of the run in progress (its age, holder and
// generation, by the store's clock), round trips per store operation. The
// real promtool, where installed, finds nothing either.
func TestMetricsOfARealRunLintCleanAndMatch(t *testing.T) {
	for _, o := range openers {
		t.Run(o.name, func(t *testing.T) {
			t.Parallel()
			fake := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			reg := prometheus.NewRegistry()
			col, err := metrics.New(reg, &metrics.Options{Replica: "replica-a"})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(metrics.Handler(reg))
			defer srv.Close()
			get := func() *scrape.Page {
				t.Helper()
				p, err := scrape.Get(srv.URL)
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			st, _ := o.open(t, col, fake.Now)

			var flakyCalls atomic.Int32
			longStarted, longRelease := make(chan struct{}, 5), make(chan struct{})
			jobs := []cronfence.Job{
				{Name: "ok", Schedule: "* * * * *", Handler: func(context.Context, *cronfence.Run) error { return nil }},
				{Name: "flaky", Schedule: "* * * * *", MaxAttempts: 1, Handler: func(context.Context, *cronfence.Run) error {
					if flakyCalls.Add(1) == 1 {
						return errors.New("forced failure")
					}
					return nil
				}},
				{Name: "long", Schedule: "* * * * *", Handler: func(ctx context.Context, _ *cronfence.Run) error {
					longStarted <- struct{}{}
					select {
					case <-longRelease:
					case <-ctx.Done():
					}
					return nil
				}},
			}
			s, err := cronfence.New(cronfence.Config{Store: st, Owner: "replica-a", Logger: quiet, Clock: fake, Retention: -1, Observer: col})
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range jobs {
				if err := s.Register(j); err != nil {
					t.Fatal(err)
				}
			}
			if err := metrics.RegisterLeases(reg, st, metrics.LeaseOptions{Jobs: s.Jobs, Logger: quiet}); err != nil {
				t.Fatal(err)
			}
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s.Stop(context.Background()) }()
			t0 := fake.Now()
			runs := func(p *scrape.Page, job, outcome string) float64 {
				v, _ := p.Value("cronfence_runs_total", "job", job, "outcome", outcome)
				return v
			}
			// step moves the clock to the next minute once the scheduler
			// sleeps on it, and waits until cond holds on /metrics.
			step := func(what string, cond func(p *scrape.Page) bool) {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				if err := fake.WaitForTimers(ctx, 1); err != nil {
					t.Fatal("the scheduler never slept")
				}
				fake.Advance(time.Minute)
				eventually(t, what, func() bool { return cond(get()) })
			}

			step("12:01", func(p *scrape.Page) bool {
				return runs(p, "ok", "success") == 1 && runs(p, "flaky", "failure") == 1 && len(longStarted) == 1
			})
			<-longStarted
			step("12:02, long skipped", func(p *scrape.Page) bool {
				skips, _ := p.Value("cronfence_skips_total", "job", "long")
				_, okHeld := p.Value("cronfence_lease_age_seconds", "job", "ok")
				_, flakyHeld := p.Value("cronfence_lease_age_seconds", "job", "flaky")
				return runs(p, "ok", "success") == 2 && runs(p, "flaky", "success") == 1 && skips == 1 && !okHeld && !flakyHeld
			})
			p := get()
			if age, ok := p.Value("cronfence_lease_age_seconds", "job", "long", "holder", "replica-a"); !ok || age != 60 {
				t.Fatalf("lease_age_seconds{job=long,holder=replica-a} = %v (present %v) a minute into the run, want 60\n%s", age, ok, p.Text)
			}
			if gen, ok := p.Value("cronfence_lease_generation", "job", "long", "holder", "replica-a"); !ok || gen != 1 {
				t.Fatalf("lease_generation{job=long} = %v (present %v), want 1 (the job's first lease)", gen, ok)
			}
			if _, ok := p.Value("cronfence_lease_age_seconds", "job", "ok"); ok {
				t.Fatal("lease_age_seconds{job=ok} present with no run of ok in progress")
			}
			close(longRelease)
			eventually(t, "long ends", func() bool { return runs(get(), "long", "success") == 1 })
			step("12:03", func(p *scrape.Page) bool {
				// No lease in progress: each run's end is fully observed
				// (the hold ends last).
				return runs(p, "ok", "success") == 3 && runs(p, "flaky", "success") == 2 && runs(p, "long", "success") == 2 &&
					len(p.Families["cronfence_lease_age_seconds"].GetMetric()) == 0
			})

			p = get()
			problems, err := p.Lint()
			if err != nil {
				t.Fatal(err)
			}
			if len(problems) > 0 {
				t.Fatalf("promlint found %d problems:\n%s\n--- page:\n%s", len(problems), strings.Join(problems, "\n"), p.Text)
			}
			p.Promtool(t)
			names := p.Names("cronfence_")
			sort.Strings(names)
			t.Logf("metric families: %s", strings.Join(names, " "))
			t3 := t0.Add(3 * time.Minute)
			want := []struct {
				name   string
				labels []string
				value  float64
			}{
				{"cronfence_runs_total", []string{"job", "ok", "outcome", "success"}, 3},
				{"cronfence_runs_total", []string{"job", "flaky", "outcome", "failure"}, 1},
				{"cronfence_runs_total", []string{"job", "flaky", "outcome", "success"}, 2},
				{"cronfence_runs_total", []string{"job", "long", "outcome", "success"}, 2},
				{"cronfence_skips_total", []string{"job", "long", "reason", "already_executing", "replica", "replica-a"}, 1},
				{"cronfence_claims_total", []string{"job", "ok", "result", "won"}, 3},
				{"cronfence_claims_total", []string{"job", "long", "result", "won"}, 2},
				{"cronfence_claims_total", []string{"job", "long", "result", "already_executing"}, 1},
				// Every scheduled run has its latency: 3 + 3 + 2.
				{"cronfence_fire_latency_seconds", []string{"job", "ok"}, 3},
				{"cronfence_fire_latency_seconds", []string{"job", "flaky"}, 3},
				{"cronfence_fire_latency_seconds", []string{"job", "long"}, 2},
				{"cronfence_run_duration_seconds", []string{"job", "long"}, 2},
				{"cronfence_last_completed_slot_timestamp_seconds", []string{"job", "ok"}, float64(t3.Unix())},
				{"cronfence_last_completed_slot_timestamp_seconds", []string{"job", "long"}, float64(t3.Unix())},
				{"cronfence_clock_offset_seconds", nil, 0},
			}
			for _, w := range want {
				if got, ok := p.Value(w.name, w.labels...); !ok || got != w.value {
					t.Errorf("%s%v = %v (present %v), want %v", w.name, w.labels, got, ok, w.value)
				}
			}
			if n := p.Sum("cronfence_skips_total"); n != 1 {
				t.Errorf("skips_total sums to %v, want the one skip", n)
			}
			if _, ok := p.Value("cronfence_lease_age_seconds", "job", "long"); ok {
				t.Error("lease_age_seconds{job=long} still present after its run ended")
			}
			// On-time fires on a fake clock start at their slot instant.
			if mf := p.Families["cronfence_fire_latency_seconds"]; mf != nil {
				for _, m := range mf.GetMetric() {
					if sum := m.GetHistogram().GetSampleSum(); sum != 0 {
						t.Errorf("fire latency sum %v for %v, want 0 on the fake clock", sum, m.GetLabel())
					}
				}
			}
			for _, op := range []string{"SlotClaimBatch", "SlotFinish", "SlotListInterrupted"} {
				if n, ok := p.Value("cronfence_store_round_trip_seconds", "op", op); !ok || n < 1 {
					t.Errorf("store_round_trip_seconds{op=%s} count = %v, want at least one", op, n)
				}
			}
			// Three fires, each one claim round trip for all three jobs.
			if n, _ := p.Value("cronfence_store_round_trip_seconds", "op", "SlotClaimBatch"); n != 3 {
				t.Errorf("SlotClaimBatch round trips = %v, want 3 (one per minute for all jobs)", n)
			}
		})
	}
}

// The events without a scenario of their own here (the scheduler's tests
// provoke them) map to their metrics.
func TestEventsMapToMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	col, err := metrics.New(reg, &metrics.Options{Replica: "r"})
	if err != nil {
		t.Fatal(err)
	}
	slot := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, e := range []cronfence.Event{
		cronfence.RunStartEvent{Job: "j", Slot: slot, Lease: "job:j", Generation: 4, Attempt: 1, Origin: cronfence.OriginCatchUp, Latency: 90 * time.Second},
		// A retry waits for its backoff on purpose: counted, not a fire's latency.
		cronfence.RunStartEvent{Job: "j", Slot: slot, Lease: "job:j", Generation: 5, Attempt: 2, Origin: cronfence.OriginRetry, Latency: 100 * time.Second},
		cronfence.LeaseLostEvent{Job: "j", Lease: "job:j", Generation: 4},
		cronfence.FenceRefusedEvent{Job: "j", Lease: "job:j", Generation: 4},
		cronfence.FenceRefusedEvent{Job: "j", Lease: "job:j", Generation: 4},
		cronfence.RunEndEvent{Job: "j", Slot: slot, Lease: "job:j", Generation: 4, Attempt: 1, Origin: cronfence.OriginCatchUp, Outcome: cronfence.RunFailed},
		cronfence.ClockOffsetEvent{Offset: -1500 * time.Millisecond},
		cronfence.ClaimEvent{Job: "j", Slot: slot, Refusal: store.ClaimPaused},
		cronfence.AlertEvent{Alert: store.Alert{Kind: store.AlertSkipStreak, Subject: "j"}, Raised: true},
		cronfence.AlertEvent{Alert: store.Alert{Kind: store.AlertSkipStreak, Subject: "j"}, Raised: false},
		cronfence.AlertEvent{Alert: store.Alert{Kind: store.AlertDeadlineMissed, Subject: "j"}, Raised: true},
	} {
		col.Observe(e)
	}
	srv := httptest.NewServer(metrics.Handler(reg))
	defer srv.Close()
	p, err := scrape.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		name   string
		labels []string
		value  float64
	}{
		{"cronfence_catch_up_runs_total", []string{"job", "j"}, 1},
		{"cronfence_retries_total", []string{"job", "j"}, 1},
		{"cronfence_fire_latency_seconds", []string{"job", "j"}, 1}, // the catch-up only
		{"cronfence_leases_lost_total", []string{"job", "j"}, 1},
		{"cronfence_fence_refusals_total", []string{"job", "j"}, 2},
		{"cronfence_runs_total", []string{"job", "j", "outcome", "failure"}, 1},
		{"cronfence_clock_offset_seconds", nil, -1.5},
		{"cronfence_claims_total", []string{"job", "j", "result", "paused"}, 1},
		{"cronfence_alerts_raised_total", []string{"kind", "skip_streak"}, 1},
		{"cronfence_alerts_resolved_total", []string{"kind", "skip_streak"}, 1},
		{"cronfence_alerts_raised_total", []string{"kind", "deadline_missed"}, 1},
	} {
		if got, ok := p.Value(w.name, w.labels...); !ok || got != w.value {
			t.Errorf("%s%v = %v (present %v), want %v", w.name, w.labels, got, ok, w.value)
		}
	}
	// A failed run completes nothing.
	if _, ok := p.Value("cronfence_last_completed_slot_timestamp_seconds", "job", "j"); ok {
		t.Error("a failed run set last_completed_slot_timestamp_seconds")
	}
	if problems, err := p.Lint(); err != nil || len(problems) > 0 {
		t.Fatalf("promlint: %v %v", problems, err)
	}
}

// New registers on the registry it is given and nowhere else: two
// collectors on two registries coexist, a second on the same one fails.
func TestNewRegistersOnlyOnTheGivenRegistry(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	if _, err := metrics.New(reg, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := metrics.New(prometheus.NewRegistry(), nil); err != nil {
		t.Fatalf("a second collector on its own registry: %v", err)
	}
	if _, err := metrics.New(reg, nil); err == nil {
		t.Fatal("a second collector on the same registry registered twice")
	}
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "cronfence_") {
			t.Fatalf("%s is on the global registry", mf.GetName())
		}
	}
}

// The wrapper keeps exactly the optional interfaces the store has: the
// scheduler finds liveness and notices (PostgreSQL) by type assertion,
// and would silently lose them behind a wrapper that hid them.
func TestInstrumentStoreKeepsOptionalInterfaces(t *testing.T) {
	t.Parallel()
	for _, o := range openers {
		t.Run(o.name, func(t *testing.T) {
			col, err := metrics.New(prometheus.NewRegistry(), nil)
			if err != nil {
				t.Fatal(err)
			}
			wrapped, _ := o.open(t, col, nil)
			var raw store.Store
			switch o.name {
			case "postgres":
				raw = &postgres.Store{}
			case "sqlite":
				raw = &sqlite.Store{}
			}
			_, rawLive := raw.(store.Liveness)
			_, live := wrapped.(store.Liveness)
			if live != rawLive {
				t.Fatalf("wrapped: liveness %v; the store: liveness %v", live, rawLive)
			}
			if o.name == "postgres" && !live {
				t.Fatal("the PostgreSQL store lost its liveness lock behind the wrapper")
			}
			_, rawTells := raw.(store.Notices)
			_, tells := wrapped.(store.Notices)
			if tells != rawTells {
				t.Fatalf("wrapped: notices %v; the store: notices %v", tells, rawTells)
			}
			if o.name == "postgres" && !tells {
				t.Fatal("the PostgreSQL store lost its notices behind the wrapper: every replica would claim every slot")
			}
		})
	}
}
