package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"time"

	sqlite3 "modernc.org/sqlite/lib"
)

// How the store waits for the file's write lock held by another process.
//
// Waiting for it is polling whoever does it: SQLite cannot be told when
// another process lets go of the lock. Left to SQLite (busy_timeout), a
// connection retries on a back-off of 1, 2, 5, 10, 15, 20, 25, 25, 25, 50,
// 50 and then 100ms. That schedule suits an occasional waiter. It suits
// badly what this store is for: many replicas on one host that all want the
// lock at the same instant, since every replica's timer fires on the same
// minute. After 50ms of waiting a process looks again only every 25 to
// 100ms, and all of them on the same schedule, so once the holder commits
// the lock lies idle until some sleeper wakes, and k processes queued
// behind one another take k such gaps instead of k transactions. It is also
// unfair to the longest waiters: a newcomer retries after 1, 2 and 5ms and
// overtakes a process that has waited for seconds and now looks every
// 100ms, which is how a waiter comes to reach BusyTimeout (and a renewal
// that does loses its lease). With 32 Stores contending on one file (the
// conformance Race tests, under the race detector, which makes every
// transaction several times slower) four fifths of the time went on such
// idle lock.
//
// So the store's own writes take the lock on connections with no busy
// timeout, where BEGIN IMMEDIATE fails at once with SQLITE_BUSY, and retry
// in Go: soon at first, as a store transaction is short, then every
// lockPollMax, jittered by half either way so that contenders do not retry
// in step. While a process wants the lock it is never left idle for more
// than 3ms. A failed attempt costs a few microseconds (a few locks on the
// shared-memory file): 31 processes polling a lock held for a whole second
// use about a tenth of one CPU between them. Retrying BEGIN is what
// SQLite's busy handler does, from the same state (nothing read, nothing
// written), so atomicity and fencing are unchanged; only the schedule is.
// Transactions a handler begins on DB() keep SQLite's busy timeout.
const (
	lockPollMin = 250 * time.Microsecond
	lockPollMax = 2 * time.Millisecond
)

// pollDelay returns how long to sleep before retry n (0-based): the base
// doubles from lockPollMin up to lockPollMax, and the sleep is uniform
// between half and one and a half times the base.
func pollDelay(n int) time.Duration {
	base := lockPollMin
	for i := 0; i < n && base < lockPollMax; i++ {
		base *= 2
	}
	base = min(base, lockPollMax)
	return base/2 + rand.N(base)
}

// beginImmediate begins an immediate transaction on db, whose connections
// have no busy timeout, retrying while another connection holds the write
// lock, for at most timeout in all or until ctx ends.
func beginImmediate(ctx context.Context, db *sql.DB, timeout time.Duration) (tx *sql.Tx, err error) {
	err = whileBusy(ctx, timeout, "the write lock", func() error {
		tx, err = db.BeginTx(ctx, nil)
		return err
	})
	return tx, err
}

// whileBusy calls fn until it returns anything but SQLITE_BUSY, sleeping
// between calls on the schedule of pollDelay, for at most timeout in all or
// until ctx ends. what names the lock in the error that ends the wait.
func whileBusy(ctx context.Context, timeout time.Duration, what string, fn func() error) error {
	deadline := time.Now().Add(timeout)
	for n := 0; ; n++ {
		err := fn()
		if !isBusy(err) {
			return err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("waited BusyTimeout (%s) for %s: %w", timeout, what, err)
		}
		timer := time.NewTimer(min(pollDelay(n), left))
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
	}
}

// isBusy reports an SQLITE_BUSY, of any extended kind, in err's chain: the
// lock was taken, try again.
func isBusy(err error) bool {
	return sqliteCode(err)&0xff == sqlite3.SQLITE_BUSY
}
