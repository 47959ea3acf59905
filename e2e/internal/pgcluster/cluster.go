// Package pgcluster starts a private, throwaway PostgreSQL server for the
// e2e tests, which stop and restart it as a fault. It is a small copy of the
// root module's internal/pgtest cluster (internal packages cannot be shared
// across modules): initdb and pg_ctl, as the "postgres" OS user when the
// test runs as root, on a free 127.0.0.1 port with trust authentication,
// everything in one directory removed at cleanup. The machine's own
// PostgreSQL is never touched.
package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/freeport"
)

// cmdTimeout bounds initdb and every pg_ctl call, so a hung command fails
// the test instead of hanging it.
const cmdTimeout = 2 * time.Minute

// Cluster is a running throwaway server. Its methods are safe for
// concurrent use.
type Cluster struct {
	bin  string
	dir  string
	cred *syscall.Credential // nil: run as ourselves
	port int

	mu sync.Mutex // one pg_ctl at a time
}

// New initialises and starts a cluster; it is stopped at once and removed
// when the test ends.
func New(t testing.TB) *Cluster {
	t.Helper()
	c, err := start()
	if err != nil {
		t.Fatalf("pgcluster: %v (the e2e tests need the PostgreSQL server binaries: apt-get install postgresql)", err)
	}
	t.Cleanup(func() {
		if err := c.destroy(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// URL is the "postgres" database as the postgres superuser, directly (no
// proxy). It stays valid across restarts.
func (c *Cluster) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// Addr is the server's host:port.
func (c *Cluster) Addr() string { return fmt.Sprintf("127.0.0.1:%d", c.port) }

// Restart stops the server (fast: sessions are cut, a checkpoint is
// written) and starts it again on the same port.
func (c *Cluster) Restart() error {
	if err := c.pgctl("stop", "-m", "fast"); err != nil {
		return err
	}
	return c.startServer()
}

func start() (*Cluster, error) {
	bin, err := findBinDir()
	if err != nil {
		return nil, err
	}
	cred, err := serverUser()
	if err != nil {
		return nil, err
	}
	// The server's user must be able to reach the directory: /tmp is.
	dir, err := os.MkdirTemp("/tmp", "cronfence-e2e-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin, dir: dir, cred: cred}
	if err := c.create(); err != nil {
		return nil, errors.Join(err, c.destroy())
	}
	return c, nil
}

// layOut makes the socket directory, and hands it and the cluster's
// directory to the server's user.
func (c *Cluster) layOut() error {
	sock := filepath.Join(c.dir, "sock")
	if err := os.Mkdir(sock, 0o700); err != nil {
		return err
	}
	if c.cred != nil {
		for _, p := range []string{c.dir, sock} {
			if err := os.Chown(p, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *Cluster) create() error {
	if err := c.layOut(); err != nil {
		return err
	}
	// -N: no fsync; the cluster is thrown away.
	if err := c.run("initdb", "-D", c.dataDir(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "-N"); err != nil {
		return err
	}
	var err error
	for range 3 { // another process may take the probed port before the server binds it
		if c.port, err = freeport.Port(); err != nil {
			return err
		}
		if err = c.startServer(); err == nil || !strings.Contains(err.Error(), "already in use") {
			return err
		}
	}
	return err
}

func (c *Cluster) startServer() error {
	// synchronous_commit stays on: a commit acknowledged before a restart
	// must survive it, or the checker would see effects vanish.
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k '%s' -c fsync=off -c full_page_writes=off -c shared_buffers=32MB -c max_connections=200",
		c.port, filepath.Join(c.dir, "sock"))
	return c.pgctl("start", "-l", filepath.Join(c.dir, "server.log"), "-o", opts)
}

func (c *Cluster) pgctl(verb string, args ...string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.run("pg_ctl", append([]string{verb, "-D", c.dataDir(), "-w", "-t", "60"}, args...)...)
}

// destroy stops the server at once if it runs and removes the directory,
// unless the server cannot be stopped: deleting the data of a live server
// would leave an orphan nothing can find.
func (c *Cluster) destroy() error {
	if _, err := os.Stat(filepath.Join(c.dataDir(), "postmaster.pid")); err == nil {
		if err := c.pgctl("stop", "-m", "immediate"); err != nil {
			return fmt.Errorf("pgcluster: server in %s left running: %w", c.dir, err)
		}
	}
	return os.RemoveAll(c.dir)
}

func (c *Cluster) dataDir() string { return filepath.Join(c.dir, "data") }

func (c *Cluster) run(name string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	cmd.WaitDelay = 5 * time.Second
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") && !strings.HasPrefix(kv, "LC_ALL=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "LC_ALL=C")
	if out, err := cmd.CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
		if len(log) > 2048 {
			log = log[len(log)-2048:]
		}
		return fmt.Errorf("pgcluster: %s %s: %w\n%s\nserver log tail:\n%s", name, strings.Join(args, " "), err, out, log)
	}
	return nil
}

// findBinDir prefers the newest /usr/lib/postgresql/N/bin, then PATH.
func findBinDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(dirs, func(i, j int) bool { return major(dirs[i]) > major(dirs[j]) })
	if p, err := exec.LookPath("initdb"); err == nil {
		dirs = append(dirs, p)
	}
	for _, initdb := range dirs {
		if _, err := exec.LookPath(filepath.Join(filepath.Dir(initdb), "pg_ctl")); err == nil {
			return filepath.Dir(initdb), nil
		}
	}
	return "", errors.New("no initdb with a pg_ctl beside it in /usr/lib/postgresql/*/bin or on PATH")
}

func major(initdb string) float64 {
	f, err := strconv.ParseFloat(filepath.Base(filepath.Dir(filepath.Dir(initdb))), 64)
	if err != nil {
		return -1
	}
	return f
}

// serverUser is the "postgres" OS user when we are root (PostgreSQL refuses
// to run as root), else nil.
func serverUser() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root needs a \"postgres\" OS user to run the server as: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// NewStandby starts a throwaway streaming standby of primary, made by
// pg_basebackup (-R: primary_conninfo and standby.signal), removed at
// cleanup. It streams asynchronously unless the primary's
// synchronous_standby_names names it ('*' names any).
func NewStandby(t testing.TB, primary *Cluster) (*Cluster, error) {
	t.Helper()
	c, err := startStandby(primary)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: standby: %w", err)
	}
	t.Cleanup(func() {
		if err := c.destroy(); err != nil {
			t.Error(err)
		}
	})
	return c, nil
}

func startStandby(primary *Cluster) (*Cluster, error) {
	dir, err := os.MkdirTemp("/tmp", "cronfence-e2e-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: primary.bin, dir: dir, cred: primary.cred}
	if err := c.layOut(); err != nil {
		return nil, errors.Join(err, c.destroy())
	}
	if err := c.run("pg_basebackup", "-D", c.dataDir(), "-h", "127.0.0.1", "-p", strconv.Itoa(primary.port), "-U", "postgres",
		"-X", "stream", "-R", "-c", "fast", "-N"); err != nil {
		return nil, errors.Join(err, c.destroy())
	}
	if c.port, err = freeport.Port(); err != nil {
		return nil, errors.Join(err, c.destroy())
	}
	if err := c.startServer(); err != nil {
		return nil, errors.Join(err, c.destroy())
	}
	return c, nil
}

// Promote ends a standby's recovery and waits until it accepts writes, on
// a new timeline.
func (c *Cluster) Promote() error { return c.pgctl("promote") }

// Kill stops the server as a crash would (pg_ctl stop -m immediate): no
// checkpoint, and whatever a standby had not received yet is lost to it.
func (c *Cluster) Kill() error { return c.pgctl("stop", "-m", "immediate") }
