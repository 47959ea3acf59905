package cronfence

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/store/postgres"
)

// BenchmarkReplicas runs real replica processes (cmd/benchreplica) on
// a throwaway PostgreSQL cluster with pg_stat_statements, on the real
// clock, and measures what a user's deployment would see:
//
//   - slot → handler start (p50, p99), on each replica's own clock, which
//     this host shares with the database;
//   - the statements every replica sends, idle work included, per slot,
//     counted at the server (pg_stat_statements, the replicas' role only);
//   - that no slot in the window ran twice, and how many runs it missed;
//   - with many jobs, each replica's share of every slot's runs;
//   - the CPU the database server (all its processes) and the replicas
//     used in the window, in cores (db-cores, replica-cores): both share
//     this machine's, and what a run costs each is what bounds throughput.
//
// Scenarios: one job every 2 s doing 200 ms of work at 3, 6 and 10
// replicas (the way issue 14's comparison was measured), 1,000 jobs every
// second at 3 replicas for the spread, and 10,000 for the throughput
// ($CRONFENCE_BENCH_JOBS adds one of that many jobs at 3 replicas). The
// window is $CRONFENCE_BENCH_SECONDS (default 60) per scenario, after the
// replicas ran for $CRONFENCE_BENCH_WARMUP (default 10s); the replica
// binary is built from this tree unless $CRONFENCE_BENCH_REPLICA names one
// (a binary built from another tree, for a before and after in one
// session).
// With many jobs it logs how many of each slot's runs started, and how
// many more than a second late; $CRONFENCE_BENCH_DISTURB (a duration)
// runs busy loops ($CRONFENCE_BENCH_DISTURB_LOOPS, default 4) that long,
// 10 s into the window, to show whether the replicas catch up after a
// host's hiccup.
// The replicas tune their pools as the cronfence binary does
// (postgres.TunePool) unless $CRONFENCE_BENCH_UNTUNED is set.
// A replica of an older tree refuses this tree's newer schema: with
// $CRONFENCE_BENCH_REPLICA_MIGRATES set, the replicas migrate the schema
// themselves (-migrate) and the benchmark does not.
// Run it with
//
//	go test -run '^$' -bench BenchmarkReplicas -benchtime 1x .
//
// The statements that cost the most and the alerts raised are logged (-v);
// each replica writes a CPU profile when the binary named wraps it with
// -cpuprofile.
func BenchmarkReplicas(b *testing.B) {
	window := 60 * time.Second
	if v := os.Getenv("CRONFENCE_BENCH_SECONDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 10 {
			b.Fatalf("CRONFENCE_BENCH_SECONDS must be a whole number of seconds, at least 10, got %q", v)
		}
		window = time.Duration(n) * time.Second
	}
	warmup := 10 * time.Second
	if v := os.Getenv("CRONFENCE_BENCH_WARMUP"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			b.Fatalf("CRONFENCE_BENCH_WARMUP must be a duration, at least 0, got %q", v)
		}
		warmup = d
	}
	disturb := disturbance{loops: 4}
	if v := os.Getenv("CRONFENCE_BENCH_DISTURB"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			b.Fatalf("CRONFENCE_BENCH_DISTURB must be a duration, at least 0, got %q", v)
		}
		disturb.d = d
	}
	if v := os.Getenv("CRONFENCE_BENCH_DISTURB_LOOPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("CRONFENCE_BENCH_DISTURB_LOOPS must be a whole number of loops, at least 1, got %q", v)
		}
		disturb.loops = n
	}
	bin := os.Getenv("CRONFENCE_BENCH_REPLICA")
	if bin == "" {
		bin = filepath.Join(b.TempDir(), "benchreplica")
		if out, err := exec.Command("go", "build", "-o", bin, "./cmd/benchreplica").CombinedOutput(); err != nil {
			b.Fatalf("building the replica: %v\n%s", err, out)
		}
	}
	scenarios := []replicaScenario{
		{replicas: 3, jobs: 1, every: 2 * time.Second, work: 200 * time.Millisecond},
		{replicas: 6, jobs: 1, every: 2 * time.Second, work: 200 * time.Millisecond},
		{replicas: 10, jobs: 1, every: 2 * time.Second, work: 200 * time.Millisecond},
		{replicas: 3, jobs: 1000, every: time.Second, work: 0},
		{replicas: 3, jobs: 10000, every: time.Second, work: 0},
	}
	if v := os.Getenv("CRONFENCE_BENCH_JOBS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("CRONFENCE_BENCH_JOBS must be a whole number of jobs, at least 1, got %q", v)
		}
		scenarios = append(scenarios, replicaScenario{replicas: 3, jobs: n, every: time.Second, work: 0})
	}
	for _, sc := range scenarios {
		b.Run(fmt.Sprintf("replicas=%d/jobs=%d", sc.replicas, sc.jobs), func(b *testing.B) {
			for b.Loop() {
				sc.measure(b, bin, window, warmup, disturb)
			}
		})
	}
}

// disturbance is the busy loops a window runs beside the replicas
// (hog): loops of them for d, none when d is zero.
type disturbance struct {
	d     time.Duration
	loops int
}

type replicaScenario struct {
	replicas, jobs int
	every, work    time.Duration
}

// replicaRun is one handler start a replica printed.
type replicaRun struct {
	replica  int
	job      string
	slot, at time.Time
}

func (sc replicaScenario) measure(b *testing.B, bin string, window, warmup time.Duration, disturb disturbance) {
	// shared_buffers at PostgreSQL's default, not the tests' 16 MB: with
	// thousands of runs a second the tables outgrow 16 MB within the
	// window, and the server spent its time moving pages in and out of
	// the OS cache, which no deployment would.
	cluster := pgtest.NewCluster(b, "shared_preload_libraries=pg_stat_statements", "pg_stat_statements.track_planning=on", "max_connections=200",
		"shared_buffers=128MB")
	admin, err := pgxpool.New(b.Context(), cluster.URL())
	if err != nil {
		b.Fatal(err)
	}
	defer admin.Close()
	for _, q := range []string{
		`CREATE EXTENSION pg_stat_statements`,
		// The replicas' own role, so the count leaves this benchmark's
		// statements out.
		`CREATE ROLE replica LOGIN SUPERUSER`,
	} {
		if _, err := admin.Exec(b.Context(), q); err != nil {
			b.Fatal(err)
		}
	}
	st, err := postgres.New(admin, nil)
	if err != nil {
		b.Fatal(err)
	}
	// A replica built from another tree may know an older schema than
	// this tree's; with $CRONFENCE_BENCH_REPLICA_MIGRATES set, the
	// replicas migrate it themselves, to their own version.
	replicasMigrate := os.Getenv("CRONFENCE_BENCH_REPLICA_MIGRATES") != ""
	if !replicasMigrate {
		if err := st.Migrate(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
	url := strings.Replace(cluster.URL(), "postgres://postgres@", "postgres://replica@", 1)
	schedule := fmt.Sprintf("*/%d * * * * *", int(sc.every/time.Second))

	var (
		mu     sync.Mutex
		runs   []replicaRun
		claims = map[string]int{} // "origin outcome" → claims, all replicas, whole run
	)
	procs := make([]*exec.Cmd, sc.replicas)
	ready := make(chan int, sc.replicas)
	var readers sync.WaitGroup
	for i := range procs {
		args := []string{"-url", url, "-owner", fmt.Sprintf("replica-%d", i),
			"-jobs", strconv.Itoa(sc.jobs), "-schedule", schedule, "-work", sc.work.String()}
		if replicasMigrate {
			args = append(args, "-migrate")
		}
		if os.Getenv("CRONFENCE_BENCH_UNTUNED") != "" {
			args = append(args, "-tune=false")
		}
		cmd := exec.Command(bin, args...)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		procs[i] = cmd
		readers.Go(func() { readRuns(b, out, i, ready, &mu, &runs, claims) })
	}
	defer func() {
		for _, p := range procs {
			_ = p.Process.Kill()
		}
	}()
	for range procs {
		select {
		case <-ready:
		case <-time.After(time.Minute):
			b.Fatal("a replica did not start within a minute")
		}
	}
	// The window starts on a slot boundary once every replica has run
	// for the warm-up, so start-up work is left out (a replica's first
	// claims on a fresh connection prepare and plan the claim statement,
	// about 13 ms once per connection) and whole slots are counted.
	from := time.Now().Add(warmup).Add(sc.every).Truncate(sc.every).Add(sc.every)
	var dataDir string
	if err := admin.QueryRow(b.Context(), `SHOW data_directory`).Scan(&dataDir); err != nil {
		b.Fatal(err)
	}
	postmaster, err := postmasterPID(dataDir)
	if err != nil {
		b.Fatal(err)
	}
	cpu := func() (db, replicas time.Duration) {
		db, err := treeCPU(postmaster)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range procs {
			st, err := readProcStat(p.Process.Pid)
			if err != nil {
				b.Fatal(err)
			}
			replicas += st.cpu
		}
		return db, replicas
	}
	time.Sleep(time.Until(from))
	if _, err := admin.Exec(b.Context(), `SELECT pg_stat_statements_reset()`); err != nil {
		b.Fatal(err)
	}
	db0, replicas0 := cpu()
	to := from.Add(window)
	hogged := make(chan struct{})
	if disturb.d > 0 {
		// A host's hiccup (another process's burst, a noisy neighbour):
		// busy loops 10 s into the window, more than the cores. What
		// follows shows whether the replicas catch up once it ends or stay
		// behind.
		go func() {
			defer close(hogged)
			hog(b, from.Add(10*time.Second), disturb.d, disturb.loops)
		}()
	} else {
		close(hogged)
	}
	time.Sleep(time.Until(to))
	db1, replicas1 := cpu()
	var calls int64
	if err := admin.QueryRow(b.Context(),
		`SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE userid = 'replica'::regrole`).Scan(&calls); err != nil {
		b.Fatal(err)
	}
	logTopStatements(b, admin)
	logAlerts(b, admin, from)
	logOutcomes(b, admin, from, to)
	// Let the window's last runs start and print before stopping, and
	// the busy loops end, when they outlast the window.
	time.Sleep(2 * time.Second)
	<-hogged
	for _, p := range procs {
		_ = p.Process.Signal(syscall.SIGTERM)
	}
	readers.Wait()
	// Claims that ran nothing cost the database a claim each: under
	// overload fallbacks claim what a late preferred replica had not yet.
	for _, k := range slices.Sorted(maps.Keys(claims)) {
		b.Logf("claims over the whole run (warm-up included): %s %d", k, claims[k])
	}
	for i, p := range procs {
		if err := p.Wait(); err != nil {
			b.Fatalf("replica %d: %v", i, err)
		}
	}

	slots := int(window / sc.every)
	if sc.jobs > 1 {
		logRunsPerSlot(b, runs, from, to, sc.every)
	}
	per := map[string]int{}
	share := make([]map[time.Time]int, sc.replicas)
	for i := range share {
		share[i] = map[time.Time]int{}
	}
	var latencies []time.Duration
	for _, r := range runs {
		if r.slot.Before(from) || !r.slot.Before(to) {
			continue
		}
		key := r.job + " " + r.slot.String()
		if per[key]++; per[key] > 1 {
			b.Fatalf("%s ran twice", key)
		}
		share[r.replica][r.slot]++
		latencies = append(latencies, r.at.Sub(r.slot))
	}
	// A run missing is reported, not fatal: under load a slot may be
	// skipped as an overlap (the previous run's end not recorded yet),
	// which the figures must show.
	b.ReportMetric(float64(slots*sc.jobs-len(per)), "runs-missing")
	b.ReportMetric(float64(len(per))/window.Seconds(), "runs/s")
	slices.Sort(latencies)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(benchPercentile(latencies, 0.5)), "p50-ms")
	b.ReportMetric(ms(benchPercentile(latencies, 0.99)), "p99-ms")
	b.ReportMetric(float64(calls)/float64(slots), "statements/slot")
	// The CPU the database server (all its processes) and the replicas
	// used in the window, in cores: the two share this machine's.
	b.ReportMetric((db1-db0).Seconds()/window.Seconds(), "db-cores")
	b.ReportMetric((replicas1-replicas0).Seconds()/window.Seconds(), "replica-cores")
	b.ReportMetric(float64(calls)/float64(slots*sc.jobs), "statements/run")
	// CPU per run, the machine's capacity in a figure that does not need
	// the window to keep up: at 2 cores, 200 µs a run is 10,000 runs a
	// second with nothing left over.
	if n := len(per); n > 0 {
		b.ReportMetric(float64((db1-db0).Microseconds())/float64(n), "db-µs/run")
		b.ReportMetric(float64((replicas1-replicas0).Microseconds())/float64(n), "replica-µs/run")
	}
	if sc.jobs > 1 {
		lo, hi := 1.0, 0.0
		for _, m := range share {
			for t := from; t.Before(to); t = t.Add(sc.every) {
				f := float64(m[t]) / float64(sc.jobs)
				lo, hi = min(lo, f), max(hi, f)
			}
		}
		b.ReportMetric(100*lo, "min-share-%")
		b.ReportMetric(100*hi, "max-share-%")
	}
}

// logRunsPerSlot logs how many of each slot's runs started, and how many
// of those more than a second after it, slot by slot: whether a window
// kept up all along, fell behind once and stayed behind, or caught up.
func logRunsPerSlot(b *testing.B, runs []replicaRun, from, to time.Time, every time.Duration) {
	n := int(to.Sub(from) / every)
	started, late := make([]int, n), make([]int, n)
	for _, r := range runs {
		if r.slot.Before(from) || !r.slot.Before(to) {
			continue
		}
		i := int(r.slot.Sub(from) / every)
		started[i]++
		if r.at.Sub(r.slot) > time.Second {
			late[i]++
		}
	}
	b.Logf("runs started per slot: %v", started)
	b.Logf("of which more than 1 s late: %v", late)
}

// hog runs n busy shell loops from at for d: a burst of CPU beside the
// replicas and the server, more runnable processes than the cores.
func hog(b *testing.B, at time.Time, d time.Duration, n int) {
	time.Sleep(time.Until(at))
	var loops []*exec.Cmd
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			b.Error(err)
			break
		}
		loops = append(loops, cmd)
	}
	time.Sleep(d)
	for _, cmd := range loops {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}

// readRuns reads one replica's output: "ready", then a line per run.
func readRuns(b *testing.B, out io.Reader, replica int, ready chan<- int, mu *sync.Mutex, runs *[]replicaRun, claims map[string]int) {
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 1 && f[0] == "ready":
			ready <- replica
		case len(f) == 4 && f[0] == "run":
			slot, err1 := strconv.ParseInt(f[2], 10, 64)
			at, err2 := strconv.ParseInt(f[3], 10, 64)
			if err1 != nil || err2 != nil {
				b.Errorf("replica %d printed %q", replica, sc.Text())
				continue
			}
			mu.Lock()
			*runs = append(*runs, replicaRun{replica: replica, job: f[1], slot: time.Unix(0, slot), at: time.Unix(0, at)})
			mu.Unlock()
		case len(f) == 4 && f[0] == "claims":
			n, err := strconv.Atoi(f[3])
			if err != nil {
				b.Errorf("replica %d printed %q", replica, sc.Text())
				continue
			}
			mu.Lock()
			claims[f[1]+" "+f[2]] += n
			mu.Unlock()
		default:
			b.Errorf("replica %d printed %q", replica, sc.Text())
		}
	}
}

// logTopStatements logs the time the replicas' statements took at the
// server, and the statements that took most of it, with their calls, the
// rows they returned (a batch returns a row an item) and their mean
// execution time.
func logTopStatements(b *testing.B, admin *pgxpool.Pool) {
	var exec, plan float64
	if err := admin.QueryRow(context.Background(), `
		SELECT coalesce(sum(total_exec_time), 0), coalesce(sum(total_plan_time), 0)
		  FROM pg_stat_statements WHERE userid = 'replica'::regrole`).Scan(&exec, &plan); err != nil {
		b.Fatal(err)
	}
	b.Logf("statements' time at the server: %.1f s executing, %.1f s planning", exec/1000, plan/1000)
	// What the tables took since the cluster began (warm-up included): a
	// row version an update could not write beside the old one (not HOT)
	// costs a new entry in every index of its table.
	type table struct {
		Name                   string
		Ins, Upd, HOT, Deleted int64
	}
	for _, t := range collect[table](b, admin, `
		SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del
		  FROM pg_stat_user_tables WHERE schemaname = 'cronfence' ORDER BY relname`) {
		b.Logf("table %-10s %9d inserted %9d updated (%9d HOT) %9d deleted", t.Name, t.Ins, t.Upd, t.HOT, t.Deleted)
	}
	type statement struct {
		Calls, Rows int64
		Mean        float64
		Query       string
	}
	for _, st := range collect[statement](b, admin, `
		SELECT calls, rows, mean_exec_time, left(regexp_replace(query, '\s+', ' ', 'g'), 100)
		  FROM pg_stat_statements WHERE userid = 'replica'::regrole
		 ORDER BY total_exec_time DESC LIMIT 12`) {
		b.Logf("%7d calls %8d rows %8.3f ms  %s", st.Calls, st.Rows, st.Mean, st.Query)
	}
}

// logAlerts logs the alerts raised since from, by kind: under load the
// absence checks see what a user's would (skips, runs passed over).
func logAlerts(b *testing.B, admin *pgxpool.Pool, from time.Time) {
	type kindCount struct {
		Kind             string
		Raised, Resolved int64
	}
	for _, k := range collect[kindCount](b, admin, `
		SELECT kind, count(*), count(resolved_at) FROM cronfence.alerts
		 WHERE raised_at >= $1 GROUP BY kind ORDER BY count(*) DESC`, from) {
		b.Logf("alerts raised in the window: %d %s (%d resolved)", k.Raised, k.Kind, k.Resolved)
	}
}

// logOutcomes logs what became of the window's slots: each status, and
// the skip runs by reason. Under overload a window's missing runs are
// slots recorded skipped (passed over, or due while the job's previous
// run held its lease) or still buffered; the counts say which.
func logOutcomes(b *testing.B, admin *pgxpool.Pool, from, to time.Time) {
	type outcome struct {
		What string
		N    int64
	}
	for _, o := range collect[outcome](b, admin, `
		SELECT 'slots ' || status, count(*) FROM cronfence.slots
		 WHERE slot >= $1 AND slot < $2 GROUP BY status
		UNION ALL
		SELECT 'skip runs ' || reason, count(*) FROM cronfence.runs
		 WHERE skipped AND slot >= $1 AND slot < $2 GROUP BY reason
		 ORDER BY 1`, from, to) {
		b.Logf("the window's %s: %d", o.What, o.N)
	}
}

// collect runs query and returns its rows as T, column by field.
func collect[T any](b *testing.B, admin *pgxpool.Pool, query string, args ...any) []T {
	rows, err := admin.Query(context.Background(), query, args...)
	if err != nil {
		b.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[T])
	if err != nil {
		b.Fatal(err)
	}
	return got
}
