package pgtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/freeport"
)

const (
	// clusterPrefix names every cluster directory, so stale ones can be found.
	clusterPrefix = "cronfence-pg-"

	// cmdTimeout bounds initdb and every pg_ctl call, generously: a loaded
	// CI machine is slow, but a hung command must not hang the test binary.
	cmdTimeout = 2 * time.Minute

	// pgctlWait is how long pg_ctl waits for a start or stop, in seconds.
	pgctlWait = "60"

	// startAttempts bounds retries of the first start when another process
	// took the free port between our probe and the server's bind.
	startAttempts = 3
)

// Cluster is a private, throwaway PostgreSQL server for tests that stop,
// restart or kill the database. It listens on 127.0.0.1 only, trusts every
// local connection, and keeps its data, socket and log in one directory
// that is removed at cleanup. Its methods are safe for concurrent use.
type Cluster struct {
	bin  string  // holds initdb and pg_ctl
	dir  string  // data/, sock/, server.log and the owner file
	user *osUser // who the server runs as; nil means ourselves
	port int     // chosen once, so URL stays valid across restarts
	// settings are extra server settings (name=value), passed as -c at
	// every start.
	settings []string

	mu sync.Mutex // one pg_ctl at a time
}

// NewCluster starts a private throwaway cluster, initialised with initdb and
// run with pg_ctl (as the "postgres" OS user when the test runs as root, since
// PostgreSQL refuses root) on a free 127.0.0.1 port with trust
// authentication. At cleanup it is stopped at once and its directory removed.
// It takes a second or two, so keep it for tests that need to stop, restart
// or kill a server; everything else uses Schema. Each of settings
// ("name=value", as shared_preload_libraries=pg_stat_statements) is given
// to the server at every start.
func NewCluster(t testing.TB, settings ...string) *Cluster {
	t.Helper()
	bin, err := findBinDir()
	if err != nil {
		t.Fatalf("pgtest: NewCluster needs the PostgreSQL server binaries: install them (apt-get install postgresql): %v", err)
	}
	c, err := newCluster(bin, settings)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.destroy(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// URL returns the connection URL of the cluster's "postgres" database as the
// "postgres" superuser. It stays the same across Stop and Start.
func (c *Cluster) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// Stop shuts the server down cleanly (pg_ctl stop -m fast): sessions are
// disconnected, a checkpoint is written, and connections are refused until
// Start.
func (c *Cluster) Stop(t testing.TB) {
	t.Helper()
	if err := c.stop("fast"); err != nil {
		t.Fatal(err)
	}
}

// Kill stops the server the way a crash would (pg_ctl stop -m immediate):
// every process quits at once without a checkpoint, and the next Start
// replays the write-ahead log.
func (c *Cluster) Kill(t testing.TB) {
	t.Helper()
	if err := c.stop("immediate"); err != nil {
		t.Fatal(err)
	}
}

// Start starts a stopped server on the same port and waits until it accepts
// connections.
func (c *Cluster) Start(t testing.TB) {
	t.Helper()
	if err := c.start(); err != nil {
		t.Fatal(err)
	}
}

// Restart is Stop then Start.
func (c *Cluster) Restart(t testing.TB) {
	t.Helper()
	c.Stop(t)
	c.Start(t)
}

// newCluster creates, initialises and starts a cluster in a new directory.
func newCluster(bin string, settings []string) (*Cluster, error) {
	user, err := serverUser()
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	base := tempBase(user != nil)
	reapStale(bin, base, user)
	dir, err := os.MkdirTemp(base, clusterPrefix)
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	c := &Cluster{bin: bin, dir: dir, user: user, settings: settings}
	if err := c.create(); err != nil {
		if derr := c.destroy(); derr != nil {
			err = errors.Join(err, derr)
		}
		return nil, err
	}
	return c, nil
}

// create lays out the directory, runs initdb and starts the server on a free
// port.
func (c *Cluster) create() error {
	if err := c.layOut(); err != nil {
		return err
	}
	// -N skips fsync: the cluster is thrown away, and initdb's syncs are most
	// of its run time.
	if err := c.run("initdb", "-D", c.dataDir(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "-N"); err != nil {
		return err
	}
	var err error
	for range startAttempts {
		// Outside the ephemeral range: the cluster may be restarted on it.
		// Another process may still take it before the server binds; then
		// start again on another.
		if c.port, err = freeport.Port(); err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
		err = c.start()
		if err == nil || !strings.Contains(err.Error(), "already in use") {
			return err
		}
	}
	return err
}

// layOut writes the owner file and the socket directory, both the server
// user's.
func (c *Cluster) layOut() error {
	if err := writeOwner(c.dir); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	sock := filepath.Join(c.dir, "sock")
	if err := os.Mkdir(sock, 0o700); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	for _, p := range []string{c.dir, sock} {
		if err := chown(p, c.user); err != nil {
			return fmt.Errorf("pgtest: handing %s to the server's user: %w", p, err)
		}
	}
	return nil
}

func (c *Cluster) start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	// fsync is off: data only has to survive a server crash (Kill), which
	// the OS page cache covers, not an OS crash. synchronous_commit stays
	// on, since without it a commit acknowledged just before Kill is lost.
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k '%s' -c fsync=off -c full_page_writes=off -c shared_buffers=16MB",
		c.port, filepath.Join(c.dir, "sock"))
	for _, kv := range c.settings {
		opts += fmt.Sprintf(" -c '%s'", kv)
	}
	return c.run("pg_ctl", "start", "-D", c.dataDir(), "-l", c.logPath(), "-w", "-t", pgctlWait, "-o", opts)
}

func (c *Cluster) stop(mode string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.run("pg_ctl", "stop", "-D", c.dataDir(), "-m", mode, "-w", "-t", pgctlWait)
}

// destroy stops the server at once if it runs and removes the directory. If
// the server cannot be stopped the directory is left in place, since
// deleting it under a live server would leave an orphan nothing can find.
func (c *Cluster) destroy() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running() {
		if err := c.run("pg_ctl", "stop", "-D", c.dataDir(), "-m", "immediate", "-w", "-t", pgctlWait); err != nil {
			return fmt.Errorf("pgtest: throwaway server in %s left in place: %w", c.dir, err)
		}
	}
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("pgtest: removing throwaway server: %w", err)
	}
	return nil
}

// running asks pg_ctl status, which also notices a postmaster.pid left by a
// server that died.
func (c *Cluster) running() bool {
	if _, err := os.Stat(filepath.Join(c.dataDir(), "postmaster.pid")); err != nil {
		return false
	}
	return c.run("pg_ctl", "status", "-D", c.dataDir()) == nil
}
