package chaos

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/cronfence/cronfence/e2e/internal/pgcluster"
)

// replication is how the standby follows the primary in a failover run.
type replication string

const (
	// replicationAsync: the primary commits without waiting for the
	// standby, so a failover may lose its last commits (claims, effects,
	// finishes, lease acquisitions) with everything they wrote.
	replicationAsync replication = "async"
	// replicationSync: synchronous_standby_names = '*', so a commit is
	// acknowledged only once the standby has it; no acknowledged commit
	// is lost.
	replicationSync replication = "sync"
	// replicationDemoted: asynchronous, and at the failover the old
	// primary is not stopped but demoted (default_transaction_read_only)
	// and left running until the new standby is up: the replicas'
	// connections to it stay open and every write on them is refused as
	// read-only, as when a failover manager demotes a primary it cannot
	// stop at once.
	replicationDemoted replication = "demoted"
)

// demotedFor is how long a demoted primary lives on after the promotion.
const demotedFor = 8 * time.Second

// failover is the standby side of a run with one: the standby of the
// current primary (h.cluster), and each replica's second proxy. Every
// replica lists both of its proxies in its URL, with
// target_session_attrs=read-write; one leads to the primary, the other to
// the standby, and after each failover the proxy that led to the dead
// primary is pointed at a new standby of the new one.
type failover struct {
	mode    replication
	standby *pgcluster.Cluster
	proxies []*toxiproxy.Proxy // one per replica, second in its URL
	// toPrimary[i] is the proxy of replica i that leads to the primary now.
	toPrimary []*toxiproxy.Proxy
	count     int
}

// setUpStandby makes a standby of the primary and a second proxy per
// replica to it; with sync, the primary then waits for it at each commit.
func (h *harness) setUpStandby(mode replication, replicas int) error {
	sb, err := pgcluster.NewStandby(h.t, h.cluster)
	if err != nil {
		return err
	}
	fo := &failover{mode: mode, standby: sb}
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	for i := range replicas {
		p := toxiproxy.NewProxy(srv, fmt.Sprintf("r%d-second", i), "127.0.0.1:0", sb.Addr())
		if err := p.Start(); err != nil {
			return fmt.Errorf("second proxy r%d: %w", i, err)
		}
		h.t.Cleanup(p.Stop)
		fo.proxies = append(fo.proxies, p)
	}
	fo.toPrimary = append([]*toxiproxy.Proxy(nil), h.proxies...)
	h.failover = fo
	return h.replicate(context.Background())
}

// replicate sets the primary's synchronous_standby_names for the mode and
// waits until the standby streams from it.
func (h *harness) replicate(ctx context.Context) error {
	names := ""
	if h.failover.mode == replicationSync {
		names = "*"
	}
	if err := h.exec(ctx, fmt.Sprintf(`ALTER SYSTEM SET synchronous_standby_names = '%s'`, names)); err != nil {
		return err
	}
	if err := h.exec(ctx, `SELECT pg_reload_conf()`); err != nil {
		return err
	}
	for {
		var streaming bool
		err := h.query(ctx, `SELECT count(*) > 0 FROM pg_stat_replication WHERE state = 'streaming'`, func(scan func(...any) error) error {
			return scan(&streaming)
		})
		if err != nil {
			return err
		}
		if streaming {
			return nil
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}

// failOver kills the primary (a crash: no checkpoint, and with async
// replication whatever the standby had not received is gone), promotes the
// standby, and, once the new primary accepts writes, ends the fault; then
// it makes a new standby of the new primary behind the proxies that led to
// the dead one, so the next failover has one.
func (h *harness) failOver(ctx context.Context, f *fault) error {
	fo := h.failover
	if fo == nil {
		return fmt.Errorf("a failover needs a standby: run with harnessOpts.failover")
	}
	old, next := h.cluster, fo.standby
	if fo.mode == replicationDemoted {
		if err := h.exec(ctx, `ALTER SYSTEM SET default_transaction_read_only = on`); err != nil {
			return err
		}
		if err := h.exec(ctx, `SELECT pg_reload_conf()`); err != nil {
			return err
		}
	} else if err := old.Kill(); err != nil {
		return err
	}
	if err := next.Promote(); err != nil {
		return err
	}
	h.cluster, fo.standby = next, nil
	fo.count++
	var timeline int
	if err := h.query(ctx, `SELECT ('x' || left(pg_walfile_name(pg_current_wal_lsn()), 8))::bit(32)::int`,
		func(scan func(...any) error) error { return scan(&timeline) }); err != nil {
		return err
	}
	what := "killed"
	if fo.mode == replicationDemoted {
		what = "demoted to read-only"
	}
	f.Note = fmt.Sprintf("%s, primary %s, standby promoted to timeline %d (failover %d)", fo.mode, what, timeline, fo.count)
	f.End = time.Now()
	if fo.mode == replicationDemoted {
		// The demoted primary lives on for a while, reachable, as when a
		// failover manager cannot stop it at once: whatever still holds a
		// connection to it meets read-only refusals.
		if err := sleepCtx(ctx, demotedFor); err != nil {
			return err
		}
	}

	sb, err := pgcluster.NewStandby(h.t, next)
	if err != nil {
		return err
	}
	for i, p := range fo.toPrimary {
		p.Stop()
		p.Upstream = sb.Addr()
		if err := p.Start(); err != nil {
			return fmt.Errorf("repointing r%d's proxy at the new standby: %w", i, err)
		}
		// The replica's other proxy leads to the new primary now.
		if p == h.proxies[i] {
			fo.toPrimary[i] = fo.proxies[i]
		} else {
			fo.toPrimary[i] = h.proxies[i]
		}
	}
	fo.standby = sb
	if fo.mode == replicationDemoted {
		// Retired once nothing leads to it any more.
		if err := old.Kill(); err != nil {
			return err
		}
	}
	return h.replicate(ctx)
}

// failoverFaults are drawn in a failover run: the failover, and the faults
// that put a writer on the wrong side of one (a frozen writer thawing after
// it, a killed holder resumed across it).
var failoverFaults = []faultKind{faultFailover, faultFreeze, faultKill}

// TestChaosFailover is the failover run (make failover; a short variant,
// asynchronous and demoted, runs in make e2e): a primary and a streaming
// standby, asynchronous, synchronous, or asynchronous with the old primary
// demoted instead of stopped (CHAOS_FAILOVER_MODES picks), replicas on a multi-host URL with
// target_session_attrs=read-write, and the primary killed and its standby
// promoted mid-run, again and again, among freezes and kills. The
// checker's rules are the same as every run's: no effect committed twice,
// no fenced write accepted from a deposed owner, slots missed only inside
// an outage and then caught up.
func TestChaosFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos run takes minutes")
	}
	t.Parallel()
	d := envDuration(t, "CHAOS_FAILOVER_DURATION", 30*time.Second)
	for _, mode := range failoverModes(t) {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			seed := envSeed(t, fixedSeed)
			rep := runChaos(t, runOpts{seed: seed, duration: d, replicas: envInt(t, "CHAOS_REPLICAS", replicaCount),
				kinds: failoverFaults, failover: mode})
			requireClean(t, rep)
			if rep.Completed == 0 {
				t.Error("no slot completed: the run exercised nothing")
			}
			if rep.Faults[faultFailover] == 0 {
				t.Error("no failover was injected")
			}
		})
	}
}

// failoverModes are CHAOS_FAILOVER_MODES (a comma-separated list), else
// all three.
func failoverModes(t *testing.T) []replication {
	t.Helper()
	all := []replication{replicationAsync, replicationSync, replicationDemoted}
	v := os.Getenv("CHAOS_FAILOVER_MODES")
	if v == "" {
		return all
	}
	var modes []replication
	for _, m := range strings.Split(v, ",") {
		if !slices.Contains(all, replication(m)) {
			t.Fatalf("CHAOS_FAILOVER_MODES=%q: %q is not one of %v", v, m, all)
		}
		modes = append(modes, replication(m))
	}
	return modes
}
