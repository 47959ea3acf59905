package sqlite

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/cronfence/cronfence/store"
)

func TestPollDelay(t *testing.T) {
	t.Parallel()
	for n := range 50 {
		d := pollDelay(n)
		if d < lockPollMin/2 || d >= lockPollMax*3/2 {
			t.Fatalf("pollDelay(%d) = %s, want within [%s, %s)", n, d, lockPollMin/2, lockPollMax*3/2)
		}
		if n == 0 && d >= lockPollMin*3/2 {
			t.Errorf("pollDelay(0) = %s, want the first retry soon, below %s", d, lockPollMin*3/2)
		}
	}
}

// holdWriteLock begins an immediate transaction on path from a pool of its
// own, another process's, and returns its rollback.
func holdWriteLock(t *testing.T, path string) (release func()) {
	t.Helper()
	tx, err := rawDB(t, path, 0, nil).BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback() })
	return func() { _ = tx.Rollback() }
}

// TestWriteWaitsBusyTimeout: a store write behind another process's write
// lock waits BusyTimeout, not less, then fails with SQLITE_BUSY in its chain.
func TestWriteWaitsBusyTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, path := migrated(t)
	const timeout = 150 * time.Millisecond
	s := openStore(t, path, &Config{BusyTimeout: timeout})
	holdWriteLock(t, path)

	start := time.Now()
	_, _, err := s.LeaseAcquire(ctx, store.LeaseAcquireParams{Name: "n", Owner: "o", TTL: time.Minute})
	waited := time.Since(start)
	if code := sqliteCode(err); code&0xff != sqlite3.SQLITE_BUSY || !strings.Contains(err.Error(), "BusyTimeout (150ms)") {
		t.Fatalf("LeaseAcquire behind a held lock = %v (code %d), want SQLITE_BUSY after BusyTimeout", err, code)
	}
	if waited < timeout {
		t.Errorf("gave up after %s, before BusyTimeout %s", waited, timeout)
	}
	if waited > timeout+5*time.Second {
		t.Errorf("gave up after %s, long after BusyTimeout %s", waited, timeout)
	}
}

// TestWriteWaitEndsWithContext: the wait for the lock ends with the
// caller's context, long before BusyTimeout.
func TestWriteWaitEndsWithContext(t *testing.T) {
	t.Parallel()
	_, path := migrated(t)
	s := openStore(t, path, nil) // BusyTimeout 10s
	holdWriteLock(t, path)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := s.RunInsert(ctx, store.Run{Job: "j"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("RunInsert behind a held lock with a 100ms context = %v, want DeadlineExceeded", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("returned after %s; the context ended after 100ms", waited)
	}
}

// TestWriteTakesLockOnceFree: a write waiting behind another process's lock
// is not refused for it and goes through once the lock is let go.
func TestWriteTakesLockOnceFree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, path := migrated(t)
	release := holdWriteLock(t, path)
	done := make(chan error, 1)
	go func() {
		_, err := s.RunInsert(ctx, store.Run{Job: "j"})
		done <- err
	}()
	// A window in which the write must not return, however slow the machine.
	select {
	case err := <-done:
		t.Fatalf("RunInsert returned %v while another process held the write lock", err)
	case <-time.After(50 * time.Millisecond):
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("RunInsert once the lock was free: %v", err)
	}
}

// TestWriterPragmas: the store's writer connections have every setting of
// DB()'s, synchronous above all, and no busy timeout of SQLite's: the store
// waits for the lock itself.
func TestWriterPragmas(t *testing.T) {
	t.Parallel()
	s, _ := migrated(t)
	ctx := context.Background()
	if n := s.writer.Stats().MaxOpenConnections; n != 1 {
		t.Errorf("writer pool allows %d connections, want 1", n)
	}
	conn, err := s.writer.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var journal string
	var busy, synchronous, foreignKeys int
	for _, q := range []struct {
		pragma string
		dst    any
	}{
		{"journal_mode", &journal},
		{"busy_timeout", &busy},
		{"synchronous", &synchronous},
		{"foreign_keys", &foreignKeys},
	} {
		if err := conn.QueryRowContext(ctx, "PRAGMA "+q.pragma).Scan(q.dst); err != nil {
			t.Fatalf("PRAGMA %s: %v", q.pragma, err)
		}
	}
	if journal != "wal" || busy != 0 || synchronous != 1 || foreignKeys != 1 {
		t.Errorf("writer: journal_mode=%s busy_timeout=%d synchronous=%d foreign_keys=%d, want wal 0 1 (NORMAL) 1",
			journal, busy, synchronous, foreignKeys)
	}
}

// TestOpenConcurrentlyOnNewFile: replicas starting together on a file that
// does not exist yet all open it. Switching a new file to WAL fails with
// SQLITE_BUSY, without waiting, for every process but one that tries at the
// same moment; Open retries it.
func TestOpenConcurrentlyOnNewFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for range 50 {
		path := newFile(t)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				s, err := Open(ctx, path, nil)
				if err != nil {
					t.Errorf("Open: %v", err)
					return
				}
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
	}
}
