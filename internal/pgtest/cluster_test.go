package pgtest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
)

// count returns the rows of the test table in the cluster's database.
func count(t *testing.T, url string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM public.survivors").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func exec1(t *testing.T, url, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// refused fails the test unless nothing listens at url.
func refused(t *testing.T, url, when string) {
	t.Helper()
	err := probe(url)
	if err == nil || answered(err) {
		t.Fatalf("%s: connecting to %s: err = %v, want the connection refused", when, url, err)
	}
}

func TestClusterStopStartKillKeepsDataAndIsRemoved(t *testing.T) {
	t.Parallel()
	var url, dir string
	t.Run("life", func(t *testing.T) {
		c := NewCluster(t)
		url, dir = c.URL(), c.dir
		exec1(t, url, "CREATE TABLE public.survivors (x int)")
		exec1(t, url, "INSERT INTO public.survivors VALUES (1)")

		c.Stop(t)
		refused(t, url, "after Stop")
		c.Start(t)
		if got := count(t, url); got != 1 {
			t.Fatalf("after Stop and Start: %d rows, want 1", got)
		}

		// A committed row survives a crash: the WAL is replayed at start.
		exec1(t, url, "INSERT INTO public.survivors VALUES (2)")
		c.Kill(t)
		refused(t, url, "after Kill")
		c.Start(t)
		if got := count(t, url); got != 2 {
			t.Fatalf("after Kill and Start: %d rows, want 2", got)
		}

		c.Restart(t)
		if got := count(t, url); got != 2 {
			t.Fatalf("after Restart: %d rows, want 2", got)
		}
		if c.URL() != url {
			t.Errorf("URL changed across restarts: %s, then %s", url, c.URL())
		}
	})
	if url == "" {
		t.Fatal("subtest did not run")
	}
	refused(t, url, "after cleanup")
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cluster directory %s still there after cleanup: %v", dir, err)
	}
}

func TestReapStaleRemovesOnlyOrphans(t *testing.T) {
	t.Parallel()
	bin, err := findBinDir()
	if err != nil {
		t.Skip("no PostgreSQL binaries:", err)
	}
	base := t.TempDir()
	host, _ := os.Hostname()

	// A process that has exited gives a pid that is, for now, nobody's.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	deadPid := gone.ProcessState.Pid()

	mk := func(name, owner string) string {
		dir := filepath.Join(base, clusterPrefix+name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(owner), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	orphan := mk("orphan", host+" "+itoa(deadPid))
	live := mk("live", host+" "+itoa(os.Getppid()))
	foreign := mk("foreign", "another-host "+itoa(deadPid))
	unowned := mk("unowned", "")

	reapStale(bin, base, nil)

	if _, err := os.Stat(orphan); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("orphan %s kept: %v", orphan, err)
	}
	for _, dir := range []string{live, foreign, unowned} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s removed, want it kept: %v", dir, err)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
