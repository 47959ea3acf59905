// Command benchreplica is one replica of the multi-process benchmark
// (bench_test.go, BenchmarkReplicas): a scheduler on PostgreSQL
// with -jobs jobs on one schedule, each run sleeping -work, as a user's
// service would run it. It prints "ready" once started and, for every run,
// "run <job> <slot ns> <start ns>" (start: this host's clock when the
// handler began), and stops on SIGTERM or SIGINT, printing then
// "claims <origin> <outcome> <count>" for each kind of claim it made
// (outcome: won, or the store's refusal), so that a window under overload
// shows the claims that ran nothing.
//
// It is a program of its own, not a test helper, so that the benchmark
// measures replicas as they are deployed: one process each, its own pool,
// its own clock reads, and a binary built from any tree (a before and an
// after in the same session). Only the benchmark runs it: it is no part of
// what cronfence offers its users.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/store/postgres"
)

func main() {
	url := flag.String("url", "", "PostgreSQL URL (required)")
	schema := flag.String("schema", postgres.DefaultSchema, "cronfence schema, migrated beforehand")
	owner := flag.String("owner", "", "this replica's owner id (required)")
	jobs := flag.Int("jobs", 1, "how many jobs, job-0 … job-N-1, all on -schedule")
	schedule := flag.String("schedule", "*/2 * * * * *", "the jobs' schedule")
	work := flag.Duration("work", 200*time.Millisecond, "how long each run takes")
	tune := flag.Bool("tune", true, "tune and warm the pool as the cronfence binary does (postgres.TunePool, postgres.WarmPool)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof reads it)")
	memProfile := flag.String("memprofile", "", "write the allocations of the whole run to this file when it stops (go tool pprof -sample_index=alloc_space reads it)")
	migrate := flag.Bool("migrate", false, "migrate the schema first, to this binary's version (a binary built from another tree)")
	flag.Parse()
	if *url == "" || *owner == "" {
		fmt.Fprintln(os.Stderr, "benchreplica: -url and -owner are required")
		os.Exit(2)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchreplica:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "benchreplica:", err)
			os.Exit(1)
		}
	}
	err := run(*url, *schema, *owner, *jobs, *schedule, *work, *tune, *migrate)
	if *cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if *memProfile != "" {
		if werr := writeAllocs(*memProfile); werr != nil {
			fmt.Fprintln(os.Stderr, "benchreplica:", werr)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchreplica:", err)
		os.Exit(1)
	}
}

// writeAllocs writes the heap profile, whose alloc_space and
// alloc_objects samples count every allocation since the start.
func writeAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func run(url, schema, owner string, jobs int, schedule string, work time.Duration, tune, migrate bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return err
	}
	if tune {
		postgres.TunePool(cfg) // as the cronfence binary does for its pool
		postgres.WarmPool(cfg, schema)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	st, err := postgres.New(pool, &postgres.Config{Schema: schema})
	if err != nil {
		return err
	}
	if migrate {
		if err := st.Migrate(ctx); err != nil {
			return err
		}
	}
	// Claims by origin and outcome; the observer is called synchronously,
	// from many goroutines.
	var claimsMu sync.Mutex
	claims := map[[2]string]int{}
	observe := cronfence.ObserverFunc(func(e cronfence.Event) {
		if c, ok := e.(cronfence.ClaimEvent); ok {
			outcome := "won"
			if !c.Won {
				outcome = string(c.Refusal)
			}
			claimsMu.Lock()
			claims[[2]string{string(c.Origin), outcome}]++
			claimsMu.Unlock()
		}
	})
	s, err := cronfence.New(cronfence.Config{
		Store:    st,
		Owner:    owner,
		Observer: observe,
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	for i := range jobs {
		err := s.Register(cronfence.Job{
			Name: fmt.Sprintf("job-%d", i), Schedule: schedule,
			Handler: func(ctx context.Context, r *cronfence.Run) error {
				started := time.Now()
				mu.Lock()
				fmt.Fprintf(out, "run %s %d %d\n", r.Job, r.Slot.UnixNano(), started.UnixNano())
				mu.Unlock()
				select {
				case <-time.After(work):
				case <-ctx.Done():
				}
				return nil
			},
		})
		if err != nil {
			return err
		}
	}
	if err := s.Start(ctx); err != nil {
		return err
	}
	mu.Lock()
	fmt.Fprintln(out, "ready")
	out.Flush()
	mu.Unlock()
	// Flushed every 100 ms, not per run, so printing costs the handlers
	// nothing measurable.
	flush := time.NewTicker(100 * time.Millisecond)
	defer flush.Stop()
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-flush.C:
		}
		mu.Lock()
		out.Flush()
		mu.Unlock()
	}
	err = s.Stop(context.Background())
	mu.Lock()
	defer mu.Unlock()
	claimsMu.Lock()
	for k, n := range claims {
		fmt.Fprintf(out, "claims %s %s %d\n", k[0], k[1], n)
	}
	claimsMu.Unlock()
	return errors.Join(err, out.Flush())
}
