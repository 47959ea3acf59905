package pgtest

import (
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/cronfence/cronfence/internal/freeport"
)

// NewStandby starts a throwaway streaming standby of a primary that listens
// at primaryAddr (host:port: a Cluster's, or a Proxy's in front of one, so
// that a test can cut replication off). It is made by pg_basebackup
// (-R writes primary_conninfo and standby.signal), streams asynchronously
// unless the primary's synchronous_standby_names names it (any standby
// matches '*'), answers read-only queries, and is removed at cleanup like
// any Cluster. Promote turns it into a primary on a new timeline.
func NewStandby(t testing.TB, primaryAddr string) *Cluster {
	t.Helper()
	host, port, err := net.SplitHostPort(primaryAddr)
	if err != nil {
		t.Fatalf("pgtest: standby of %q: %v", primaryAddr, err)
	}
	bin, err := findBinDir()
	if err != nil {
		t.Fatalf("pgtest: NewStandby needs the PostgreSQL server binaries: install them (apt-get install postgresql): %v", err)
	}
	user, err := serverUser()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	dir, err := os.MkdirTemp(tempBase(user != nil), clusterPrefix)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	c := &Cluster{bin: bin, dir: dir, user: user}
	t.Cleanup(func() {
		if err := c.destroy(); err != nil {
			t.Error(err)
		}
	})
	if err := c.createStandby(host, port); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *Cluster) createStandby(host, port string) error {
	if err := c.layOut(); err != nil {
		return err
	}
	// -c fast: a checkpoint at once rather than spread out; -N: no fsync,
	// the copy is thrown away.
	if err := c.run("pg_basebackup", "-D", c.dataDir(), "-h", host, "-p", port, "-U", "postgres",
		"-X", "stream", "-R", "-c", "fast", "-N"); err != nil {
		return err
	}
	var err error
	if c.port, err = freeport.Port(); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	return c.start()
}

// Promote ends a standby's recovery (pg_ctl promote) and waits until it
// accepts writes, on a new timeline.
func (c *Cluster) Promote(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.run("pg_ctl", "promote", "-D", c.dataDir(), "-w", "-t", pgctlWait); err != nil {
		t.Fatal(err)
	}
}

// Addr is the server's host:port.
func (c *Cluster) Addr() string { return fmt.Sprintf("127.0.0.1:%d", c.port) }
