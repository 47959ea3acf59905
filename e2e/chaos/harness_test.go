package chaos

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/cronfence/cronfence/e2e/internal/mycluster"
	"github.com/cronfence/cronfence/e2e/internal/pgcluster"
	"github.com/cronfence/cronfence/internal/freeport"
)

// harness is one chaos run's world: the cluster, the binary, the proxies and
// the replicas.
type harness struct {
	t            *testing.T
	dir          string
	bin          string
	config       string
	runID        string // in every process's environment, to find leftovers
	breakFencing bool
	cluster      *pgcluster.Cluster // the primary; nil on SQLite
	proxies      []*toxiproxy.Proxy // one per replica; nil on SQLite
	failover     *failover          // the standby side, with harnessOpts.failover; nil without
	sqlite       string             // the SQLite file, or "" on PostgreSQL
	mysql        *mycluster.Cluster // the MySQL/MariaDB server; nil on the others
	guard        string             // weakcron's guard, or "" for cronfence
	weakBin      string             // weakcron, when guard is set
	write        writeMode          // how the job writes its effect (CHAOS_WRITE)
	replicas     []*replica
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
	buildDir  string
)

var (
	weakOnce sync.Once
	weakBin  string
	weakErr  error
)

// weakBinary builds e2e/internal/weakcron once per test process.
func weakBinary(t *testing.T) string {
	t.Helper()
	weakOnce.Do(func() {
		dir, err := os.MkdirTemp("", "cronfence-chaos-weak-")
		if err != nil {
			weakErr = err
			return
		}
		weakBin = filepath.Join(dir, "weakcron")
		cmd := exec.Command("go", "build", "-o", weakBin, "./internal/weakcron")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			weakErr = fmt.Errorf("go build ./internal/weakcron: %w\n%s", err, out)
		}
	})
	if weakErr != nil {
		t.Fatal(weakErr)
	}
	return weakBin
}

// TestMain removes the binary built for the package's tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	if weakBin != "" {
		os.RemoveAll(filepath.Dir(weakBin))
	}
	os.Exit(code)
}

// binary builds cmd/cronfence from the tree once per test process, or
// returns CHAOS_BIN, a binary built beforehand (to soak a release build).
func binary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("CHAOS_BIN"); bin != "" {
		return bin
	}
	buildOnce.Do(func() {
		root, err := filepath.Abs("../..")
		if err != nil {
			buildErr = err
			return
		}
		if buildDir, buildErr = os.MkdirTemp("", "cronfence-chaos-bin-"); buildErr != nil {
			return
		}
		builtBin = filepath.Join(buildDir, "cronfence")
		// The binary as shipped, and built the way the module's tests
		// built it (TestMakeBuildIsStatic): the packages compiled then are
		// reused, where a plain go build compiled every one again.
		cmd := exec.Command("make", "-s", "build", "BINDIR="+buildDir)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("make build in %s: %w\n%s", root, err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// harnessOpts chooses the world of a run.
type harnessOpts struct {
	replicas     int
	breakFencing bool // the job skips its fence and complete() (CHAOS_BREAK_FENCING=1)
	sqlite       bool // one SQLite file instead of PostgreSQL behind proxies
	mysql        bool // a throwaway MariaDB server instead of PostgreSQL, behind proxies
	// guard runs weakcron with this guard ("advisory", "release-at-end")
	// instead of cronfence; "" is cronfence.
	guard string
	write writeMode // how the job writes its effect; "" is writeComplete
	// failover runs a streaming standby beside the primary, and a second
	// proxy per replica to it ("async" or "sync"; see failover); "" none.
	failover replication
}

// newHarness starts the database (a throwaway PostgreSQL cluster with a
// proxy per replica, or a SQLite file), migrates it, installs the chaos
// schema, and starts the replicas.
func newHarness(t *testing.T, o harnessOpts) *harness {
	t.Helper()
	h := &harness{t: t, dir: runDir(t), bin: binary(t), runID: randomID(), breakFencing: o.breakFencing,
		guard: o.guard, write: o.write}
	if h.write == "" {
		h.write = writeComplete
	}
	if o.guard != "" {
		h.weakBin = weakBinary(t)
	}
	var err error
	switch {
	case o.sqlite:
		err = h.setUpSQLite()
	case o.mysql:
		err = h.setUpMySQL(o.replicas)
	default:
		err = h.setUpPostgres(o.replicas)
		if err == nil && o.failover != "" {
			err = h.setUpStandby(o.failover, o.replicas)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	for i := range o.replicas {
		name := fmt.Sprintf("r%d", i)
		listen, err := freeport.Addr() // the replica is killed and restarted on it
		if err != nil {
			t.Fatal(err)
		}
		r := &replica{h: h, name: name, listen: listen, log: filepath.Join(h.dir, name+".log")}
		if h.proxies != nil {
			r.proxy = h.proxies[i]
		}
		if h.failover != nil {
			r.second = h.failover.proxies[i]
		}
		h.replicas = append(h.replicas, r)
	}
	// Stop every replica even when the test fails half-way; the run itself
	// stops them first and checks nothing is left.
	t.Cleanup(func() {
		for _, r := range h.replicas {
			_ = r.term(10 * time.Second)
		}
	})
	for _, r := range h.replicas {
		if err := r.start(0); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func (h *harness) setUpPostgres(replicas int) error {
	if _, err := exec.LookPath("psql"); err != nil {
		return errors.New("the chaos jobs need psql: apt-get install postgresql-client")
	}
	h.cluster = pgcluster.New(h.t)
	if out, err := exec.Command(h.bin, "migrate", "--database", h.cluster.URL()).CombinedOutput(); err != nil {
		return fmt.Errorf("cronfence migrate: %w\n%s", err, out)
	}
	if err := h.exec(context.Background(), chaosSchema); err != nil {
		return fmt.Errorf("creating the chaos schema: %w", err)
	}
	var err error
	if h.config, err = writeConfig(h.dir, jobScript, h.write == writeComplete && !h.breakFencing); err != nil {
		return err
	}
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	for i := range replicas {
		p := toxiproxy.NewProxy(srv, fmt.Sprintf("r%d", i), "127.0.0.1:0", h.cluster.Addr())
		if err := p.Start(); err != nil {
			return fmt.Errorf("proxy r%d: %w", i, err)
		}
		h.t.Cleanup(p.Stop)
		h.proxies = append(h.proxies, p)
	}
	return nil
}

// exec runs SQL on the cluster directly (not through a proxy).
func (h *harness) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, h.cluster.URL())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// stopAll stops every replica with SIGTERM and waits for each.
func (h *harness) stopAll() error {
	var errs []error
	for _, r := range h.replicas {
		errs = append(errs, r.term(15*time.Second))
	}
	return errors.Join(errs...)
}

// byOwner finds the running replica whose pid appears in a lease owner id
// (host:pid:random).
func (h *harness) byPid(pid int) *replica {
	for _, r := range h.replicas {
		if p, ok := r.running(); ok && p == pid {
			return r
		}
	}
	return nil
}

func randomID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// query runs sql on the cluster directly and calls row for every row.
func (h *harness) query(ctx context.Context, sql string, row func(scan func(...any) error) error, args ...any) error {
	conn, err := pgx.Connect(ctx, h.cluster.URL())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

// holderPids lists the pids of the processes holding a job's lock now:
// cronfence's live job leases (owner host:pid:random), or under weakcron
// its guard's: the granted advisory locks, by the application_name
// (weakcron:pid) of the session holding them, or the unexpired rows of
// chaos.weak_locks (owner weakcron:pid).
func (h *harness) holderPids(ctx context.Context) ([]int, error) {
	var owners []string
	var err error
	switch {
	case h.mysql != nil:
		owners, err = h.mysqlHolders(ctx)
	case h.sqlite != "":
		var rows []sqliteRow
		rows, err = h.sqliteQuery(ctx, `SELECT owner FROM cronfence_leases WHERE expires_at > `+sqliteNowMicros+` AND name LIKE 'job:%' ORDER BY name`)
		for _, row := range rows {
			owners = append(owners, row.str("owner"))
		}
	case h.guard == "advisory":
		owners, err = h.strings(ctx, `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
 WHERE l.locktype = 'advisory' AND l.granted AND a.application_name LIKE 'weakcron:%'`)
	case h.guard == "release-at-end":
		owners, err = h.strings(ctx, `SELECT owner FROM chaos.weak_locks WHERE until > now() ORDER BY name`)
	default:
		owners, err = h.strings(ctx, `SELECT owner FROM cronfence.leases WHERE expires_at > now() AND name LIKE 'job:%' ORDER BY name`)
	}
	var pids []int
	for _, o := range owners {
		parts := strings.Split(o, ":")
		i := len(parts) - 2 // cronfence: host:pid:random
		if parts[0] == "weakcron" {
			i = 1
		}
		if i < 0 || i >= len(parts) {
			continue
		}
		if pid, perr := strconv.Atoi(parts[i]); perr == nil {
			pids = append(pids, pid)
		}
	}
	return pids, err
}

// strings runs a query of one text column on the cluster directly.
func (h *harness) strings(ctx context.Context, sql string) ([]string, error) {
	var out []string
	err := h.query(ctx, sql, func(scan func(...any) error) error {
		var s string
		if err := scan(&s); err != nil {
			return err
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

// runDir holds the run's config, job script, logs and the replicas'
// stderr: a test temp directory, or with CHAOS_KEEP=1 one that is kept
// for a post-mortem.
func runDir(t *testing.T) string {
	t.Helper()
	if os.Getenv("CHAOS_KEEP") != "1" {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp("", "cronfence-chaos-run-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("CHAOS_KEEP=1: the run's files stay in %s", dir)
	return dir
}
