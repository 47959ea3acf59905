package cronfence

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// BenchmarkStoredSchedules stores $CRONFENCE_BENCH_SCHEDULES (default
// 100,000) schedules of the memory benchmark's mix (memSchedules: none due
// while it runs) on PostgreSQL, starts three replicas that register their
// kind, and reports:
//
//   - heap-MB: the heap in use in this process with the three replicas
//     running, after a forced GC, divided by three (the replicas share the
//     process); heap-B/schedule the same per schedule, less the heap
//     before they started;
//   - change-p50-ms, change-p99-ms: from an update's commit to the moment
//     every replica's timers hold its new version, over 200 updates, 20 ms
//     apart, told by PostgreSQL's notices (polling off);
//   - load-s: how long a replica's Start took to load them all;
//   - stored-start-p50/p99-ms and declared-start-p50/p99-ms: from the slot
//     to its handler's start, over 20 s, for 50 stored schedules and 50
//     declared jobs due every second on the same replicas beside the
//     others: what a stored schedule's run costs against a declared job's.
//
// Run it with
//
//	go test -run '^$' -bench BenchmarkStoredSchedules -benchtime 1x .
func BenchmarkStoredSchedules(b *testing.B) {
	n := 100_000
	if v := os.Getenv("CRONFENCE_BENCH_SCHEDULES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("CRONFENCE_BENCH_SCHEDULES=%q: want a positive number", v)
		}
	}
	base, schema := benchSchema(b)
	ctx := b.Context()
	seed, err := postgres.New(base, &postgres.Config{Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	mix := memSchedules()
	createStored(b, base, schema, n, func(i int) store.ScheduleSettings {
		m := mix[i%len(mix)]
		return store.ScheduleSettings{Spec: m.spec, TimeZone: m.zone, Kind: "report", Args: json.RawMessage(fmt.Sprintf(`{"tenant":%d}`, i))}
	})
	const ticks = 50
	every := store.ScheduleSettings{Spec: "* * * * * *", Kind: "report"}
	for i := range ticks {
		if _, err := seed.ScheduleCreate(ctx, store.ScheduleCreateParams{Name: fmt.Sprintf("tick-stored-%02d", i), Settings: every, By: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
	var mu sync.Mutex
	starts := map[bool][]time.Duration{} // stored or not → slot to start
	measuring := false
	handler := func(_ context.Context, run *Run) error {
		late := time.Since(run.Slot)
		mu.Lock()
		if measuring && strings.HasPrefix(run.Job, "tick-") {
			stored := strings.HasPrefix(run.Job, "tick-stored-")
			starts[stored] = append(starts[stored], late)
		}
		mu.Unlock()
		return nil
	}

	for b.Loop() {
		before := measureMemory(b)
		var replicas []*Scheduler
		var load time.Duration
		for i := range 3 {
			s, err := New(Config{Owner: fmt.Sprintf("replica-%d", i), Store: replicaStore(b, base, schema, nil, nil),
				Logger: quiet, Retention: -1, SchedulePollEvery: -1})
			if err != nil {
				b.Fatal(err)
			}
			if err := s.RegisterKind("report", handler); err != nil {
				b.Fatal(err)
			}
			for j := range ticks {
				if err := s.Register(Job{Name: fmt.Sprintf("tick-declared-%02d", j), Schedule: every.Spec, Handler: handler}); err != nil {
					b.Fatal(err)
				}
			}
			began := time.Now()
			if err := s.Start(ctx); err != nil {
				b.Fatal(err)
			}
			load = max(load, time.Since(began))
			replicas = append(replicas, s)
		}
		for _, s := range replicas {
			if got := s.timers.len(); got < n+2*ticks {
				b.Fatalf("replica %s armed %d jobs, want %d", s.e.cfg.Owner, got, n+2*ticks)
			}
		}
		after := measureMemory(b)
		b.ReportMetric(float64(after.heap)/3/(1<<20), "heap-MB")
		b.ReportMetric((float64(after.heap)-float64(before.heap))/3/float64(n), "heap-B/schedule")
		b.ReportMetric(load.Seconds(), "load-s")

		mu.Lock()
		measuring = true
		mu.Unlock()
		time.Sleep(20 * time.Second)
		mu.Lock()
		measuring = false
		for stored, name := range map[bool]string{true: "stored", false: "declared"} {
			d := starts[stored]
			if len(d) == 0 {
				b.Fatalf("no %s run started in 20 s", name)
			}
			slices.Sort(d)
			b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, name+"-start-p50-ms")
			b.ReportMetric(float64(d[len(d)*99/100].Microseconds())/1000, name+"-start-p99-ms")
		}
		mu.Unlock()

		lat := changeLatencies(b, seed, replicas, n, 200)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "change-p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "change-p99-ms")
		runtime.KeepAlive(replicas)
		for _, s := range replicas {
			if err := s.Stop(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// createStored writes n schedules, named stored-NNNNNN, in one statement
// of the benchmark's own (a write through the store takes its turn behind
// the change log's lock, and 100,000 of them would take minutes): without
// change rows, which a replica's Start does not read.
func createStored(b *testing.B, pool *pgxpool.Pool, schema string, n int, settings func(i int) store.ScheduleSettings) {
	b.Helper()
	names, specs, zones, args := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i := range n {
		set := settings(i)
		names[i], specs[i], zones[i], args[i] = fmt.Sprintf("stored-%06d", i), set.Spec, set.TimeZone, string(set.Args)
	}
	_, err := pool.Exec(b.Context(), `INSERT INTO `+pgx.Identifier{schema, "schedules"}.Sanitize()+`
		(name, spec, time_zone, kind, args, overlap, catch_up_window_ns, lease_ttl_ns, timeout_ns, deadline_ns,
		 max_attempts, retry_backoff_ns, disabled, version, created_at, created_by, updated_at, updated_by)
		SELECT n, s, z, 'report', a::json, '', 0, 0, 0, 0, 0, 0, false, 1, now(), 'bench', now(), 'bench'
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS u(n, s, z, a)`, names, specs, zones, args)
	if err != nil {
		b.Fatal(err)
	}
}

// changeLatencies updates count schedules one at a time and returns, sorted,
// how long after each update's commit every replica held its new version.
func changeLatencies(b *testing.B, st store.Store, replicas []*Scheduler, n, count int) []time.Duration {
	b.Helper()
	var lat []time.Duration
	for i := range count {
		name := fmt.Sprintf("stored-%06d", (i*7919)%n)
		cur, err := st.ScheduleGet(b.Context(), name)
		if err != nil {
			b.Fatal(err)
		}
		set := cur.ScheduleSettings
		set.Args = json.RawMessage(fmt.Sprintf(`{"edit":%d}`, i))
		up, err := st.ScheduleUpdate(b.Context(), store.ScheduleUpdateParams{Name: name, Version: cur.Version, Settings: set, By: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		committed := time.Now()
		deadline := committed.Add(30 * time.Second)
		for {
			all := true
			for _, s := range replicas {
				if r := s.jobs.get(name); r == nil || r.stored == nil || r.stored.version != up.Version {
					all = false
					break
				}
			}
			if all {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("update %d of %s not on every replica after 30s", i, name)
			}
			time.Sleep(100 * time.Microsecond)
		}
		lat = append(lat, time.Since(committed))
		time.Sleep(20 * time.Millisecond)
	}
	slices.Sort(lat)
	return lat
}
