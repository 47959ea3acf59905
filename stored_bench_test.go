package cronfence

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
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
//   - load-s: how long a replica's Start took to load them all.
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
	createStored(b, seed, n, func(i int) store.ScheduleSettings {
		m := mix[i%len(mix)]
		return store.ScheduleSettings{Spec: m.spec, TimeZone: m.zone, Kind: "report", Args: json.RawMessage(fmt.Sprintf(`{"tenant":%d}`, i))}
	})
	handler := func(context.Context, *Run) error { return nil }

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
			began := time.Now()
			if err := s.Start(ctx); err != nil {
				b.Fatal(err)
			}
			load = max(load, time.Since(began))
			replicas = append(replicas, s)
		}
		for _, s := range replicas {
			if got := s.timers.len(); got != n {
				b.Fatalf("replica %s armed %d schedules, want %d", s.e.cfg.Owner, got, n)
			}
		}
		after := measureMemory(b)
		b.ReportMetric(float64(after.heap)/3/(1<<20), "heap-MB")
		b.ReportMetric((float64(after.heap)-float64(before.heap))/3/float64(n), "heap-B/schedule")
		b.ReportMetric(load.Seconds(), "load-s")

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

// createStored creates n schedules, named stored-NNNNNN, over 8 connections.
func createStored(b *testing.B, st store.Store, n int, settings func(i int) store.ScheduleSettings) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				_, err := st.ScheduleCreate(b.Context(), store.ScheduleCreateParams{Name: fmt.Sprintf("stored-%06d", i), Settings: settings(i), By: "bench"})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
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
