// Command weakcron runs the chaos suite's jobs under a guard weaker than
// cronfence's leases, so the suite can measure, under the same faults, what
// each design survives. It is test tooling, built by e2e/chaos; nobody
// should schedule anything with it.
//
//	-guard advisory        package advisory: pg_try_advisory_lock around the
//	                       run on one session, unlock at the end, skip when busy
//	-guard release-at-end  a lock row with a TTL, taken before the run and
//	                       deleted after it (the shape of gocron's distributed
//	                       locker)
//
// Neither records the slot that ran and neither fences the job's write, so
// the job runs with CRONFENCE_GENERATION=0 and CHAOS_BREAK_FENCING=1 (no
// fence, no complete()); CRONFENCE_LEASE is the name of its lock, job:NAME,
// which the job's ledger row records. Slots
// come from this process's clock (CRONFENCE_TEST_CLOCK_OFFSET shifts it),
// as in any cron that trusts its host.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cronfence/cronfence/advisory"
)

// job is one -job flag: NAME:EVERY_SECONDS:WORK_SECONDS:HOLD_SECONDS.
type job struct {
	name       string
	every      time.Duration
	work, hold string
}

type jobsFlag []job

func (j *jobsFlag) String() string { return fmt.Sprint(*j) }

func (j *jobsFlag) Set(v string) error {
	parts := strings.Split(v, ":")
	if len(parts) != 4 {
		return fmt.Errorf("-job %q: want NAME:EVERY_SECONDS:WORK:HOLD", v)
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil || n <= 0 {
		return fmt.Errorf("-job %q: EVERY_SECONDS must be a positive integer", v)
	}
	*j = append(*j, job{name: parts[0], every: time.Duration(n) * time.Second, work: parts[2], hold: parts[3]})
	return nil
}

// guard runs fn when it gets the job's lock, and reports whether it ran.
type guard func(ctx context.Context, name string, fn func(context.Context) error) (bool, error)

func main() {
	var (
		guardName = flag.String("guard", "", "advisory or release-at-end")
		database  = flag.String("database", "", "PostgreSQL URL")
		script    = flag.String("script", "", "the job's command")
		listen    = flag.String("listen", "", "address of /readyz")
		ttl       = flag.Duration("ttl", 3*time.Second, "release-at-end: the lock row's TTL")
		jobs      jobsFlag
	)
	flag.Var(&jobs, "job", "NAME:EVERY_SECONDS:WORK:HOLD (repeatable)")
	flag.Parse()
	if err := run(*guardName, *database, *script, *listen, *ttl, jobs); err != nil {
		log.Fatalf("weakcron: %v", err)
	}
}

func run(guardName, database, script, listen string, ttl time.Duration, jobs []job) error {
	offset, err := time.ParseDuration(orDefault(os.Getenv("CRONFENCE_TEST_CLOCK_OFFSET"), "0s"))
	if err != nil {
		return fmt.Errorf("CRONFENCE_TEST_CLOCK_OFFSET: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	cfg, err := pgxpool.ParseConfig(database)
	if err != nil {
		return fmt.Errorf("-database: %w", err)
	}
	cfg.MaxConns = 8
	// The chaos harness finds the holder of an advisory lock by the
	// application_name of the session holding it (pg_stat_activity).
	owner := fmt.Sprintf("weakcron:%d", os.Getpid())
	cfg.ConnConfig.RuntimeParams["application_name"] = owner
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()

	var g guard
	switch guardName {
	case "advisory":
		g = advisory.New(pool).Do
	case "release-at-end":
		g = releaseAtEnd(pool, owner, ttl)
	default:
		return fmt.Errorf("-guard %q: want advisory or release-at-end", guardName)
	}

	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }),
		ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fire(ctx, g, j, script, offset)
		}()
	}
	wg.Wait()
	return nil
}

// fire runs j at every slot of its schedule by this process's clock, each
// run in its own goroutine, until ctx ends; then it waits for them.
func fire(ctx context.Context, g guard, j job, script string, offset time.Duration) {
	var runs sync.WaitGroup
	defer runs.Wait()
	for {
		now := time.Now().Add(offset)
		slot := now.Truncate(j.every).Add(j.every)
		select {
		case <-ctx.Done():
			return
		case <-time.After(slot.Sub(now)):
		}
		runs.Add(1)
		go func() {
			defer runs.Done()
			// The run outlives a SIGTERM by design (it finishes, as in a
			// graceful stop); a kill takes it down through Pdeathsig.
			_, err := g(context.WithoutCancel(ctx), "job:"+j.name, func(ctx context.Context) error {
				return runScript(ctx, j, script, slot)
			})
			if err != nil {
				log.Printf("weakcron: %s %s: %v", j.name, slot.UTC().Format(time.RFC3339), err)
			}
		}()
	}
}

func runScript(ctx context.Context, j job, script string, slot time.Time) error {
	cmd := exec.CommandContext(ctx, "/bin/sh", script)
	cmd.Env = append(os.Environ(),
		"CRONFENCE_JOB="+j.name,
		"CRONFENCE_SLOT="+slot.UTC().Format(time.RFC3339Nano),
		"CRONFENCE_GENERATION=0",
		"CRONFENCE_LEASE=job:"+j.name,
		"CRONFENCE_ATTEMPT=1",
		"CHAOS_WORK="+j.work,
		"CHAOS_HOLD="+j.hold,
		"CHAOS_BREAK_FENCING=1",
	)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}

// releaseAtEnd is a lock row with an expiry: taken if absent or expired,
// deleted when the run ends. The row says nothing about which slot ran.
func releaseAtEnd(pool *pgxpool.Pool, owner string, ttl time.Duration) guard {
	return func(ctx context.Context, name string, fn func(context.Context) error) (bool, error) {
		var got int
		err := pool.QueryRow(ctx, `
INSERT INTO chaos.weak_locks AS l (name, owner, until) VALUES ($1, $2, now() + $3 * interval '1 millisecond')
ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, until = EXCLUDED.until WHERE l.until < now()
RETURNING 1`, name, owner, ttl.Milliseconds()).Scan(&got)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		ferr := fn(ctx)
		_, uerr := pool.Exec(ctx, `DELETE FROM chaos.weak_locks WHERE name = $1 AND owner = $2`, name, owner)
		return true, errors.Join(ferr, uerr)
	}
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
