// Package mycluster starts a private, throwaway MariaDB (or MySQL) server
// for the e2e tests, which stop and restart it as a fault: the server
// binaries of the machine (mariadbd and mariadb-install-db, or mysqld),
// one data directory under /tmp, a free 127.0.0.1 port, root without a
// password, everything removed at cleanup. The machine's own server is
// never touched.
package mycluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/freeport"
)

// startTimeout bounds the data directory's creation and each start.
const startTimeout = 2 * time.Minute

// Cluster is a running throwaway server. Its methods are safe for
// concurrent use.
type Cluster struct {
	dir  string
	port int

	mu  sync.Mutex // one start or stop at a time
	cmd *exec.Cmd  // the running server; nil while stopped
}

// New initialises and starts a server; it is stopped and removed when the
// test ends.
func New(t testing.TB) *Cluster {
	t.Helper()
	c, err := start()
	if err != nil {
		t.Fatalf("mycluster: %v (the MySQL chaos run needs the MariaDB server binaries: apt-get install mariadb-server)", err)
	}
	t.Cleanup(func() {
		if err := c.destroy(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// URL is the database db as root, directly (no proxy), in the form the
// cronfence binary takes. It stays valid across restarts.
func (c *Cluster) URL(db string) string { return fmt.Sprintf("mysql://root@%s/%s", c.Addr(), db) }

// Addr is the server's host:port.
func (c *Cluster) Addr() string { return fmt.Sprintf("127.0.0.1:%d", c.port) }

// Port is the server's port.
func (c *Cluster) Port() int { return c.port }

func start() (*Cluster, error) {
	dir, err := os.MkdirTemp("/tmp", "cronfence-e2e-my-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir}
	if c.port, err = freeport.Port(); err != nil {
		return nil, errors.Join(err, c.destroy())
	}
	install, err := exec.LookPath("mariadb-install-db")
	if err != nil {
		return nil, errors.Join(err, c.destroy())
	}
	cmd := exec.Command(install, "--no-defaults", "--datadir="+c.data(), "--user="+whoami(),
		"--auth-root-authentication-method=normal", "--skip-test-db")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, errors.Join(fmt.Errorf("mariadb-install-db: %w\n%s", err, out), c.destroy())
	}
	if err := c.Start(); err != nil {
		return nil, errors.Join(err, c.destroy())
	}
	return c, nil
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

// Start starts the stopped server and waits until it accepts connections.
func (c *Cluster) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd != nil {
		return errors.New("mycluster: already running")
	}
	bin, err := exec.LookPath("mariadbd")
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/mariadbd"); err != nil {
			return err
		}
	}
	log, err := os.OpenFile(filepath.Join(c.dir, "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, "--no-defaults", "--datadir="+c.data(), "--socket="+filepath.Join(c.dir, "sock"),
		fmt.Sprintf("--port=%d", c.port), "--bind-address=127.0.0.1", "--user="+whoami(),
		"--skip-log-bin", "--innodb-buffer-pool-size=64M", "--innodb-flush-log-at-trx-commit=2", "--max-connections=500")
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group: a signal to the test does not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); log.Close() }()
	deadline := time.Now().Add(startTimeout)
	for {
		conn, err := net.DialTimeout("tcp", c.Addr(), time.Second)
		if err == nil {
			conn.Close()
			c.cmd = cmd
			go func() { <-exited }()
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("mariadbd exited during start-up: %v; see %s", err, filepath.Join(c.dir, "server.log"))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			return fmt.Errorf("mariadbd did not accept connections within %s", startTimeout)
		}
	}
}

// Stop shuts the server down (SIGTERM: sessions are cut, InnoDB flushes)
// and waits for it to exit.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		return nil
	}
	cmd := c.cmd
	c.cmd = nil
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	deadline := time.Now().Add(startTimeout)
	for processAlive(cmd.Process.Pid) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			return fmt.Errorf("mariadbd did not stop within %s", startTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// Restart stops the server and starts it again on the same port.
func (c *Cluster) Restart() error {
	if err := c.Stop(); err != nil {
		return err
	}
	return c.Start()
}

func (c *Cluster) destroy() error {
	err := c.Stop()
	return errors.Join(err, os.RemoveAll(c.dir))
}

// processAlive reports whether pid is a live, not yet reaped process.
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses: Z is a zombie.
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ')' {
			return i+2 < len(b) && b[i+2] != 'Z'
		}
	}
	return true
}

// whoami is the user the server runs as: this process's (mariadbd refuses
// root unless told so with --user=root).
func whoami() string {
	if os.Geteuid() == 0 {
		return "root"
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return fmt.Sprint(os.Geteuid())
}
