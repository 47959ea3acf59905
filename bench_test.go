package cronfence

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
)

// The benchmarks below measure the scheduler on PostgreSQL, replica-level
// figures the store benchmarks (store/postgres/bench_test.go) cannot give:
//
//   - BenchmarkSchedulerRoundTrips: round trips a winner and a loser spend
//     on one fire of 1 and of 50 jobs due at the same instant, counted at
//     the driver (fake clock, one fire per iteration).
//   - BenchmarkSchedulerIdleRoundTrips: round trips one replica spends per
//     minute with nothing due (fake clock).
//   - BenchmarkSchedulerFireLatency: time from the slot instant to the
//     handler's start, with 3 replicas × 1,000 jobs due every second, on
//     the real clock (about 5 seconds per iteration).
//   - BenchmarkSchedulerMemory: heap and resident memory of one process
//     with 100,000 registered jobs armed on a started scheduler.
//
// Run them with
//
//	go test -run '^$' -bench Scheduler -benchtime 1x .
//
// and see docs/benchmarks.md for the figures and how to read them.

// ---------------------------------------------------------------------------
// Round trips per fire.

const (
	// rtWarmupFires run before the measured ones: they open the pools'
	// connections and prepare every statement on them.
	rtWarmupFires = 10
)

// rtReplica is one replica of the round-trip benchmark: a scheduler on a
// pool of its own whose every round trip is counted.
type rtReplica struct {
	s     *Scheduler
	trips *pgtest.RoundTrips
}

// rtGate blocks the handlers of one fire until the loser has fired.
type rtGate struct {
	mu   sync.Mutex
	open chan struct{}
	runs map[string]int // owner → runs started since reset
}

func (g *rtGate) reset() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open, g.runs = make(chan struct{}), map[string]int{}
}

func (g *rtGate) handler(ctx context.Context, run *Run) error {
	g.mu.Lock()
	g.runs[run.Owner]++
	open := g.open
	g.mu.Unlock()
	select {
	case <-open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *rtGate) ran(owner string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.runs[owner]
}

// BenchmarkSchedulerRoundTrips counts, at the driver, the round trips of
// one fire of k jobs due at the same instant on two replicas: the winner's
// claim (one statement for all k), the winner's finishes (one per run) and
// the loser's refused claim. Each iteration is one fire.
func BenchmarkSchedulerRoundTrips(b *testing.B) {
	for _, k := range []int{1, 50} {
		b.Run(fmt.Sprintf("jobs=%d", k), func(b *testing.B) { benchRoundTrips(b, k) })
	}
}

func benchRoundTrips(b *testing.B, k int) {
	base, schema := pgtest.Schema(b)
	// The database clock: pinned by NowFunc, moved by hand. Half a minute
	// before a whole minute, so each fire is one Advance away.
	db := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC))
	gate := &rtGate{}
	gate.reset()
	jobs := make([]Job, k)
	for i := range jobs {
		// LeaseTTL of an hour: no renewal within a run (the keeper renews
		// at TTL/3, 20 minutes of fake time away).
		jobs[i] = Job{Name: fmt.Sprintf("job-%03d", i), Schedule: "* * * * *", LeaseTTL: time.Hour, Handler: gate.handler}
	}

	// The loser's clock is a fake of its own, moved to each slot only once
	// the winner has claimed it, so the winner always claims first and the
	// loser always meets running slots (refused already_executing, the
	// common losing path). (A loser clock merely running behind no longer
	// does: the scheduler measures its offset again when it sees its clock
	// jump, as the fake clock's one-minute moves look, and fires on the
	// database's time like the winner.)
	lc := clock.NewFake(db.Now())
	open := func(owner string, clk clock.Clock, migrate bool) rtReplica {
		trips := &pgtest.RoundTrips{}
		st := replicaStore(b, base, schema, trips.Trace, db.Now)
		if migrate {
			if err := st.Migrate(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
		s, err := New(Config{
			Store: st, Owner: owner, Logger: quiet, Clock: clk,
			// Only the fire is counted: no pruning, no replica registry
			// and absence checks, clock checks and the poll for
			// interrupted runs pushed a day away (see
			// BenchmarkSchedulerIdleRoundTrips for what they cost), and
			// sleeps long enough that a fake clock moved to the next slot
			// at once is not taken for a step of the clock (which is
			// measured again then).
			Retention: -1, ClockCheckEvery: 24 * time.Hour, ResumeEvery: 24 * time.Hour,
			HeartbeatEvery: -1, CheckEvery: -1, MaxSleep: 2 * time.Minute,
		})
		if err != nil {
			b.Fatal(err)
		}
		for _, j := range jobs {
			if err := s.Register(j); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Start(b.Context()); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = s.Stop(ctx)
		})
		return rtReplica{s: s, trips: trips}
	}
	winner := open("winner", db, true)
	loser := open("loser", lc, false)

	// waitFor polls until both replicas' busy counts and the fake clock's
	// timers are as given (each loop sleeps on one timer; the winner's
	// keeper keeps one while it holds leases), checking twice like the
	// harness's settle, since a loop between wake-up and its busy mark looks
	// idle once.
	waitFor := func(what string, winnerBusy, timers int) {
		b.Helper()
		ok := func() bool {
			return winner.s.e.Busy.Load() == int64(winnerBusy) && loser.s.e.Busy.Load() == 0 && db.Timers()+lc.Timers() == timers
		}
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if ok() {
				time.Sleep(time.Millisecond)
				if ok() {
					return
				}
			}
			time.Sleep(100 * time.Microsecond)
		}
		b.Fatalf("%s: winner busy %d (want %d), loser busy %d (want 0), %d timers (want %d)",
			what, winner.s.e.Busy.Load(), winnerBusy, loser.s.e.Busy.Load(), db.Timers()+lc.Timers(), timers)
	}
	waitFor("start", 0, 2)

	type counts struct{ claim, finish, lose, prepares, connects int64 }
	// fire runs one slot: the winner claims and its handlers block; the
	// loser claims the running slots and is refused; the handlers end and
	// the winner finishes each run.
	fire := func(record bool) counts {
		b.Helper()
		gate.reset()
		now := db.Now()
		slot := now.Truncate(time.Minute).Add(time.Minute)
		prep0 := winner.trips.Prepares() + loser.trips.Prepares()
		conn0 := winner.trips.Connects() + loser.trips.Connects()
		w0, l0 := winner.trips.Total(), loser.trips.Total()
		winner.trips.Record(record)
		loser.trips.Record(record)

		db.Advance(slot.Sub(now))
		waitFor("winner's claim", k, 3)
		w1 := winner.trips.Total()
		claimSeen := winner.trips.Record(record)

		lc.Advance(slot.Sub(now))
		waitFor("loser's claim", k, 3)
		l1 := loser.trips.Total()
		loseSeen := loser.trips.Record(false)

		gate.mu.Lock()
		close(gate.open)
		gate.mu.Unlock()
		waitFor("winner's finishes", 0, 2)
		w2 := winner.trips.Total()
		finishSeen := winner.trips.Record(false)

		if got := gate.ran("winner"); got != k {
			b.Fatalf("slot %s: the winner ran %d jobs, want %d", slot.Format(time.TimeOnly), got, k)
		}
		if got := gate.ran("loser"); got != 0 {
			b.Fatalf("slot %s: the loser ran %d jobs, want 0", slot.Format(time.TimeOnly), got)
		}
		if l1 == l0 {
			b.Fatalf("slot %s: the loser sent no claim", slot.Format(time.TimeOnly))
		}
		c := counts{
			claim: w1 - w0, finish: w2 - w1, lose: l1 - l0,
			prepares: winner.trips.Prepares() + loser.trips.Prepares() - prep0,
			connects: winner.trips.Connects() + loser.trips.Connects() - conn0,
		}
		// The budget: one claim, at most one finish a run (group commit
		// sends fewer when runs end together), one losing claim.
		if record && (c.claim != 1 || c.finish > int64(k) || c.lose != 1) {
			b.Logf("slot %s over budget: winner's claim %v; winner's finishes %v; loser %v",
				slot.Format(time.TimeOnly), claimSeen, finishSeen, loseSeen)
		}
		return c
	}

	for range rtWarmupFires {
		fire(false)
	}
	var sum counts
	fires := 0
	for b.Loop() {
		c := fire(true)
		sum.claim += c.claim
		sum.finish += c.finish
		sum.lose += c.lose
		sum.prepares += c.prepares
		sum.connects += c.connects
		fires++
	}
	n := float64(fires)
	b.ReportMetric(float64(sum.claim)/n, "winner-claim-rt/fire")
	b.ReportMetric(float64(sum.finish)/n/float64(k), "winner-finish-rt/run")
	b.ReportMetric(float64(sum.claim+sum.finish)/n, "winner-rt/fire")
	b.ReportMetric(float64(sum.lose)/n, "loser-rt/fire")
	if sum.prepares > 0 {
		b.ReportMetric(float64(sum.prepares)/n, "prepares/fire") // included in the round trips above
	}
	if sum.connects > 0 {
		b.ReportMetric(float64(sum.connects)/n, "connects/fire")
	}
}

// benchSchema returns pgtest's pool and a fresh schema holding cronfence's
// tables.
func benchSchema(b *testing.B) (*pgxpool.Pool, string) {
	b.Helper()
	base, schema := pgtest.Schema(b)
	st, err := postgres.New(base, &postgres.Config{Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Migrate(b.Context()); err != nil {
		b.Fatal(err)
	}
	return base, schema
}

// replicaStore is one replica's store on schema, over a pool of its own
// with base's settings, closed at cleanup: trace (nil: none) sets a tracer
// on the pool's config, now (nil: the database's) pins its clock.
func replicaStore(b *testing.B, base *pgxpool.Pool, schema string, trace func(*pgxpool.Config), now func() time.Time) *postgres.Store {
	b.Helper()
	cfg := base.Config() // a copy, with pgtest's settings
	if trace != nil {
		trace(cfg)
	}
	pool, err := pgxpool.NewWithConfig(b.Context(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	st, err := postgres.New(pool, &postgres.Config{Schema: schema, NowFunc: now})
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// openTracedPostgres opens a migrated PostgreSQL store in a schema of its
// own, on db's clock, with its round trips counted.
func openTracedPostgres(b *testing.B, db *clock.Fake) (store.Store, *pgtest.RoundTrips) {
	base, schema := benchSchema(b)
	trips := &pgtest.RoundTrips{}
	return replicaStore(b, base, schema, trips.Trace, db.Now), trips
}

// BenchmarkSchedulerIdleRoundTrips counts the round trips one replica
// spends on its own, with nothing due, per minute: the background load every
// replica puts on the database whatever its jobs do. The replica has the
// default configuration (pruning, clock checks, the poll for interrupted
// runs) and one hourly job; the fake clock moves in 100 ms steps. Its store
// reads the clock from NowFunc, after the same one SELECT clock_timestamp()
// a clock check costs in production. Each iteration is one minute.
func BenchmarkSchedulerIdleRoundTrips(b *testing.B) {
	db := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC))
	st, trips := openTracedPostgres(b, db)
	s, err := New(Config{Store: st, Owner: "idle", Logger: quiet, Clock: db})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Register(Job{Name: "hourly", Schedule: "0 * * * *", Handler: func(context.Context, *Run) error { return nil }}); err != nil {
		b.Fatal(err)
	}
	if err := s.Start(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Stop(context.Background()) })

	settle := func() {
		b.Helper()
		idle := func() bool { return s.e.Busy.Load() == 0 && db.Timers() == 1 }
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if idle() {
				time.Sleep(time.Millisecond)
				if idle() {
					return
				}
			}
			time.Sleep(100 * time.Microsecond)
		}
		b.Fatalf("replica did not settle: busy %d, %d timers", s.e.Busy.Load(), db.Timers())
	}
	minute := func() {
		for range 600 {
			db.Advance(100 * time.Millisecond)
			settle()
		}
	}
	settle()
	minute() // the first prune, connections opened, statements prepared

	var total int64
	var seen []string
	minutes := 0
	for b.Loop() {
		t0 := trips.Total()
		trips.Record(true)
		minute()
		seen = trips.Record(false)
		total += trips.Total() - t0
		minutes++
	}
	b.ReportMetric(float64(total)/float64(minutes), "rt/min")
	kinds := map[string]int{}
	for _, q := range seen {
		kinds[q]++
	}
	b.Logf("statements in the last minute: %v", kinds)
}

// ---------------------------------------------------------------------------
// Fire latency.

const (
	latReplicas = 3
	latJobs     = 1000
	// latSlots is how many whole-second slots are measured per iteration,
	// starting with the first after every replica has started.
	latSlots = 5
)

// latRecorder keeps, for every run, when its handler started relative to
// its slot.
type latRecorder struct {
	mu   sync.Mutex
	runs []latRun
}

type latRun struct {
	job     string
	slot    time.Time
	owner   string
	latency time.Duration
}

func (r *latRecorder) handler(_ context.Context, run *Run) error {
	d := time.Since(run.Slot)
	r.mu.Lock()
	r.runs = append(r.runs, latRun{job: run.Job, slot: run.Slot, owner: run.Owner, latency: d})
	r.mu.Unlock()
	return nil
}

// latClaims is a pgx tracer on one replica's pool that times its claim
// statements (recognised by their array of slot instants, the second
// argument), to split the fire latency into its parts.
type latClaims struct {
	owner string
	mu    sync.Mutex
	seen  []latClaim
}

// trace sets c as the tracer of a pool's connections.
func (c *latClaims) trace(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = c }

type latClaim struct {
	owner      string
	slot       time.Time
	sent, done time.Time
}

type latClaimKey struct{}

func (c *latClaims) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	args := d.Args
	if len(args) > 0 {
		if _, mode := args[0].(pgx.QueryExecMode); mode {
			args = args[1:] // a large batch, sent with the simple protocol (store/postgres: plannedForSize)
		}
	}
	if len(args) < 2 || !strings.Contains(d.SQL, "$2::timestamptz[]") {
		return ctx
	}
	slots, ok := args[1].([]time.Time)
	if !ok || len(slots) == 0 {
		return ctx
	}
	return context.WithValue(ctx, latClaimKey{}, &latClaim{owner: c.owner, slot: slots[0], sent: time.Now()})
}

func (c *latClaims) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	if cl, ok := ctx.Value(latClaimKey{}).(*latClaim); ok {
		cl.done = time.Now()
		c.mu.Lock()
		c.seen = append(c.seen, *cl)
		c.mu.Unlock()
	}
}

// BenchmarkSchedulerFireLatency runs 3 replicas (each on its own pool) with
// the same 1,000 jobs due every second, on the real clock and the real
// database clock, for latSlots seconds per iteration. Every handler records
// time.Since(run.Slot) as it starts. Over the measured slots it reports the
// percentiles of that latency, the runs per slot (every job once: 1,000),
// the duplicates (a job's slot run more than once: must be 0), how many
// replicas won some of each slot's jobs and the share of all runs the
// busiest replica ran. The claim statements, timed at the
// driver, split the latency: from the slot to the claim being sent, the
// winning claim's duration, and from its return to the handlers' start.
func BenchmarkSchedulerFireLatency(b *testing.B) {
	base, schema := benchSchema(b)

	var (
		latencies               []time.Duration
		sends, winClaims        []time.Duration // slot → claim sent; winning claim's duration
		loseClaims, afterClaim  []time.Duration // losing claims' duration; winning claim's return → handler
		slots, runs, duplicates int
		lastFinish              time.Duration // the latest end of a run after its slot
		minPerSlot              = math.MaxInt
		winners                 int
		byOwner                 = map[string]int{} // runs per replica
	)
	for b.Loop() {
		rec := &latRecorder{}
		replicas := make([]*Scheduler, latReplicas)
		tracers := make([]*latClaims, latReplicas)
		for i := range replicas {
			owner := fmt.Sprintf("replica-%d-%d", i, os.Getpid())
			tracers[i] = &latClaims{owner: owner}
			s, err := New(Config{Store: replicaStore(b, base, schema, tracers[i].trace, nil), Owner: owner, Logger: quiet, Retention: -1})
			if err != nil {
				b.Fatal(err)
			}
			for j := range latJobs {
				if err := s.Register(Job{Name: fmt.Sprintf("job-%04d", j), Schedule: "* * * * * *", Handler: rec.handler}); err != nil {
					b.Fatal(err)
				}
			}
			replicas[i] = s
		}
		for _, s := range replicas {
			if err := s.Start(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
		from := time.Now().Truncate(time.Second).Add(time.Second)
		to := from.Add(latSlots * time.Second) // the first slot past the measured ones
		// Stop just before the next slot falls due, so no claim is cut short.
		time.Sleep(time.Until(to.Add(-100 * time.Millisecond)))
		var wg sync.WaitGroup
		for _, s := range replicas {
			wg.Go(func() {
				if err := s.Stop(context.Background()); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()

		// Keyed by Unix second: run.Slot is UTC, from is local with a
		// monotonic reading, and == on time.Time compares both.
		perSlot := map[int64]int{}
		ownersPerSlot := map[int64]map[string]bool{}
		firstRun := map[int64]time.Duration{}
		seen := map[string]int{}
		for _, r := range rec.runs {
			if r.slot.Before(from) || !r.slot.Before(to) {
				continue
			}
			latencies = append(latencies, r.latency)
			sec := r.slot.Unix()
			perSlot[sec]++
			if ownersPerSlot[sec] == nil {
				ownersPerSlot[sec] = map[string]bool{}
			}
			ownersPerSlot[sec][r.owner] = true
			byOwner[r.owner]++
			if f, ok := firstRun[sec]; !ok || r.latency < f {
				firstRun[sec] = r.latency
			}
			key := r.job + "@" + strconv.FormatInt(sec, 10)
			if seen[key]++; seen[key] > 1 {
				duplicates++
			}
			runs++
		}
		for slot := from; slot.Before(to); slot = slot.Add(time.Second) {
			minPerSlot = min(minPerSlot, perSlot[slot.Unix()])
			winners += len(ownersPerSlot[slot.Unix()])
			slots++
		}
		if len(perSlot) != latSlots {
			b.Errorf("runs in %d of the %d measured slots", len(perSlot), latSlots)
		}
		// When the slot's last run was finished, by the database clock
		// (this host's): the headroom left before the next slot, when a
		// run still holding its lease would make that slot skipped.
		var last float64
		if err := base.QueryRow(b.Context(),
			`SELECT coalesce(extract(epoch FROM max(finished_at - slot)), 0) FROM `+pgx.Identifier{schema, "slots"}.Sanitize()+
				` WHERE slot >= $1 AND slot < $2`, from, to).Scan(&last); err != nil {
			b.Fatal(err)
		}
		lastFinish = max(lastFinish, time.Duration(last*float64(time.Second)))
		if slices.ContainsFunc(slices.Collect(maps.Values(perSlot)), func(n int) bool { return n != latJobs }) {
			b.Errorf("not every job ran once in every slot; the measured slots' rows by status: %s", slotStatuses(base, schema, from, to))
		}

		claims := 0
		for _, t := range tracers {
			for _, c := range t.seen {
				sec := c.slot.Unix()
				if c.slot.Before(from) || !c.slot.Before(to) {
					continue
				}
				claims++
				sends = append(sends, c.sent.Sub(c.slot))
				if ownersPerSlot[sec][c.owner] {
					winClaims = append(winClaims, c.done.Sub(c.sent))
					if f, ok := firstRun[sec]; ok {
						afterClaim = append(afterClaim, f-c.done.Sub(c.slot))
					}
				} else {
					loseClaims = append(loseClaims, c.done.Sub(c.sent))
				}
			}
		}
		if claims != latReplicas*latSlots {
			b.Errorf("%d claim statements recognised in the measured slots, want %d (one per replica and slot): "+
				"has the claim's SQL changed? See latClaims", claims, latReplicas*latSlots)
		}
	}
	if len(latencies) == 0 {
		b.Fatal("no run in the measured slots")
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	p := func(ds []time.Duration, q float64) float64 {
		if len(ds) == 0 {
			return math.NaN()
		}
		slices.Sort(ds)
		return ms(benchPercentile(ds, q))
	}
	b.ReportMetric(p(latencies, 0.50), "p50-ms")
	b.ReportMetric(p(latencies, 0.99), "p99-ms")
	b.ReportMetric(p(latencies, 1), "max-ms")
	b.ReportMetric(float64(runs)/float64(slots), "runs/slot")
	b.ReportMetric(float64(minPerSlot), "min-runs/slot")
	b.ReportMetric(float64(duplicates), "duplicates")
	b.ReportMetric(float64(winners)/float64(slots), "winning-replicas/slot")
	top := 0
	for _, n := range byOwner {
		top = max(top, n)
	}
	b.ReportMetric(float64(top)/float64(runs), "busiest-replica-share")
	b.ReportMetric(p(sends, 0.50), "send-p50-ms")
	b.ReportMetric(p(sends, 1), "send-max-ms")
	b.ReportMetric(p(winClaims, 0.50), "won-claim-p50-ms")
	b.ReportMetric(p(loseClaims, 0.50), "lost-claim-p50-ms")
	b.ReportMetric(p(afterClaim, 0.50), "first-handler-after-claim-p50-ms")
	b.ReportMetric(ms(lastFinish), "last-finish-max-ms")
	if duplicates > 0 || minPerSlot != latJobs || runs != slots*latJobs {
		b.Errorf("%d runs over %d slots (fewest in one slot %d), %d duplicates; want %d a slot, no duplicate",
			runs, slots, minPerSlot, duplicates, latJobs)
	}
}

// slotStatuses counts the slot rows in [from, to) by status, to tell a
// missing run's fate: skipped means the job's previous run still held its
// lease when the slot fell due (the machine did not keep up: under -race,
// for one).
func slotStatuses(pool *pgxpool.Pool, schema string, from, to time.Time) string {
	rows, err := pool.Query(context.Background(),
		`SELECT status, count(*) FROM `+pgx.Identifier{schema, "slots"}.Sanitize()+` WHERE slot >= $1 AND slot < $2 GROUP BY status ORDER BY status`,
		from, to)
	if err != nil {
		return err.Error()
	}
	counts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var (
			status string
			n      int
		)
		err := r.Scan(&status, &n)
		return fmt.Sprintf("%s %d", status, n), err
	})
	if err != nil {
		return err.Error()
	}
	return strings.Join(counts, ", ")
}

// benchPercentile returns the q-quantile of sorted by the nearest-rank method.
func benchPercentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0 // none measured (a losing claim, when only the preferred replica claims)
	}
	rank := int(math.Ceil(q * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}

// ---------------------------------------------------------------------------
// Memory.

// memJobs is how many jobs the memory benchmark registers:
// CRONFENCE_MEM_JOBS if set (e.g. 1000000), else 100,000.
func memJobs(b *testing.B) int {
	v := os.Getenv("CRONFENCE_MEM_JOBS")
	if v == "" {
		return 100_000
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("CRONFENCE_MEM_JOBS=%q: want a positive number of jobs", v)
	}
	return n
}

// memSchedules returns the mix of schedules the memory benchmark registers,
// one job in five each: five and six fields, UTC and two zones (in the
// Job's TimeZone and in the spec). Every one falls due in the month about
// half a year from now, so none is due while the benchmark runs and the
// started scheduler only sleeps.
func memSchedules() []memSchedule {
	month := (int(time.Now().Month())+5)%12 + 1
	return []memSchedule{
		{fmt.Sprintf("0 0 1 %d *", month), ""},
		{fmt.Sprintf("30 12 15 %d 1-5", month), ""},
		{fmt.Sprintf("0 30 3 28 %d *", month), ""}, // six fields
		{fmt.Sprintf("15 4 1 %d *", month), "Europe/Lisbon"},
		{fmt.Sprintf("CRON_TZ=Asia/Tokyo 0 9 1-7 %d 1", month), ""},
	}
}

type memSchedule struct{ spec, zone string }

// BenchmarkSchedulerMemory registers 100,000 jobs (distinct names, one
// shared handler) on one Scheduler and starts it, so every job sits armed
// on the timer heap, then reports the heap in use and the resident set
// size, before and after, each after a forced GC that also returns freed
// memory to the OS. "mixed" cycles through all of memSchedules; "utc"
// through its three UTC schedules only, and "lisbon" registers every job
// in Europe/Lisbon, to show what a zone costs.
//
// CRONFENCE_MEM_JOBS sets another number of jobs. CRONFENCE_MEM_PROFILE,
// a path, writes a heap profile at the "after" reading (the scheduler
// still running) to that path with the mix's name appended, for
//
//	go tool pprof -sample_index=inuse_space -top PATH.mixed
func BenchmarkSchedulerMemory(b *testing.B) {
	mix := memSchedules()
	b.Run("schedules=mixed", func(b *testing.B) { benchMemory(b, "mixed", mix) })
	b.Run("schedules=utc", func(b *testing.B) { benchMemory(b, "utc", mix[:3]) })
	b.Run("schedules=lisbon", func(b *testing.B) { benchMemory(b, "lisbon", mix[3:4]) })
}

func benchMemory(b *testing.B, name string, mix []memSchedule) {
	jobs := memJobs(b)
	base, schema := benchSchema(b)
	st, err := postgres.New(base, &postgres.Config{Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	handler := func(context.Context, *Run) error { return nil }

	var before, after memFigures
	for b.Loop() {
		before = measureMemory(b)
		s, err := New(Config{Store: st, Logger: quiet, Retention: -1})
		if err != nil {
			b.Fatal(err)
		}
		for i := range jobs {
			m := mix[i%len(mix)]
			if err := s.Register(Job{Name: fmt.Sprintf("tenant-%06d/report", i), Schedule: m.spec, TimeZone: m.zone, Handler: handler}); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Start(b.Context()); err != nil {
			b.Fatal(err)
		}
		s.mu.Lock()
		armed, earliest := s.timers.heap.Len(), s.timers.heap[0].fireAt
		s.mu.Unlock()
		if armed != jobs {
			b.Fatalf("%d jobs armed, want %d", armed, jobs)
		}
		if until := time.Until(earliest); until < 24*time.Hour {
			b.Fatalf("the earliest job is due in %s: the figures would include runs", until)
		}
		after = measureMemory(b)
		if path := os.Getenv("CRONFENCE_MEM_PROFILE"); path != "" {
			writeHeapProfile(b, path+"."+name)
		}
		runtime.KeepAlive(s)
		if err := s.Stop(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	mb := func(v uint64) float64 { return float64(v) / (1 << 20) }
	perJob := func(a, b uint64) float64 { return (float64(a) - float64(b)) / float64(jobs) }
	b.ReportMetric(mb(before.heap), "heap-before-MB")
	b.ReportMetric(mb(after.heap), "heap-after-MB")
	b.ReportMetric(perJob(after.heap, before.heap), "heap-B/job")
	b.ReportMetric(mb(before.rss), "rss-before-MB")
	b.ReportMetric(mb(after.rss), "rss-after-MB")
	b.ReportMetric(perJob(after.rss, before.rss), "rss-B/job")
}

type memFigures struct{ heap, rss uint64 }

// writeHeapProfile writes the heap profile as of the last collection.
func writeHeapProfile(b *testing.B, path string) {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}

// measureMemory forces a collection, returns freed memory to the OS, and
// reads HeapInuse and VmRSS.
func measureMemory(b *testing.B) memFigures {
	b.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memFigures{heap: ms.HeapInuse, rss: vmRSS(b)}
}

// vmRSS reads this process's resident set size from /proc/self/status.
func vmRSS(b *testing.B) uint64 {
	b.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatalf("reading VmRSS: %v", err)
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest) // "123456 kB"
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseUint(f[0], 10, 64)
				if err == nil {
					return kb << 10
				}
			}
		}
	}
	b.Fatalf("no VmRSS line in /proc/self/status")
	return 0
}
