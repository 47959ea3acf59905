package postgres

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cronfence/cronfence/store"
)

var _ store.Liveness = (*Store)(nil)

// livenessKey derives the advisory lock key of an owner's liveness lock,
// distinct per schema so two cronfence installations in one database do not
// read each other's owners.
func (s *Store) livenessKey(owner string) int64 {
	h := fnv.New64a()
	h.Write([]byte("cronfence.live:" + s.schema + ":" + owner))
	return int64(h.Sum64())
}

// LivenessHold takes a session-level advisory lock for owner on a connection
// of its own, taken out of the pool for the life of the hold. While the
// process lives, that session and its lock live; when the process dies, the
// server ends the session and the lock is free, and contenders may take the
// owner's leases over at once (see slotClaimSQL).
//
// The connection can also break while the process lives (a network cut, a
// database restart, a terminated backend). Every claim this owner makes then
// looks like a dead owner's, and is taken over at once. So the hold watches
// its connection every Config.LivenessCheckEvery, without a round trip
// (pgconn's CheckConn reads with a 1 ms deadline), and when it is gone takes
// the same lock again on a new connection, retrying until the server has
// ended the old session. Between the break and the new lock, contenders may
// take this owner's leases: its renewals then affect no row and its work is
// cancelled, and fencing refuses its writes, so nothing unsafe happens; only
// runs are cut short. Leases this store acquires or claims in that time
// record no key (see liveKeyArg), so they at least wait for their TTL; each
// claim looks at the connection itself first, so a break is noticed by the
// first claim after it, not only by the watchdog's next look.
//
// release unlocks and closes the connection (a graceful shutdown hands the
// leases over at once). It is safe to call more than once, not concurrently.
func (s *Store) LivenessHold(ctx context.Context, owner string) (key int64, release func(), err error) {
	if err := store.ValidateName("owner", owner); err != nil {
		return 0, nil, err
	}
	if err := s.usable(); err != nil {
		return 0, nil, err
	}
	key = s.livenessKey(owner)
	raw, locked, err := s.takeLiveness(ctx, key)
	if err != nil {
		return 0, nil, err
	}
	if !locked {
		return 0, nil, fmt.Errorf("postgres: the liveness lock of owner %q is held by another session: owner ids must be unique per process", owner)
	}
	h := &livenessHold{store: s, key: key, conn: raw, checked: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	s.liveHolds.Store(key, h)
	go h.watch(s.livenessCheckEvery)
	return key, h.release, nil
}

// liveKeyArg is the live key a lease acquisition or claim records: key
// while this store's hold of that liveness lock is known whole, 0 while it
// is not (its connection broke and the lock is not taken again yet). A
// lease recorded with a key no session holds would look like a dead
// owner's and be taken over at once by any contender; after a database
// restart every replica is in that state for a moment, and each taker's
// own claims would be taken over in turn. With no key, the lease waits for
// its TTL, as on SQLite. A key this store does not hold is passed on as
// the caller gave it.
func (s *Store) liveKeyArg(key int64) int64 {
	if key == 0 {
		return 0
	}
	v, ok := s.liveHolds.Load(key)
	if !ok {
		return key
	}
	if !v.(*livenessHold).whole(time.Now()) {
		return 0
	}
	return key
}

// takeLiveness takes the lock on a connection out of the pool, returning
// the connection when it got the lock.
func (s *Store) takeLiveness(ctx context.Context, key int64) (*pgx.Conn, bool, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, s.translate("acquire the liveness connection", err)
	}
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&locked); err != nil {
		conn.Release()
		return nil, false, s.translate("take the liveness lock", err)
	}
	if !locked {
		conn.Release()
		return nil, false, nil
	}
	// The connection never goes back to the pool: closing it is what ends
	// the session and frees the lock.
	return conn.Hijack(), true, nil
}

// livenessHold is one held liveness lock and its watchdog.
type livenessHold struct {
	store *Store
	key   int64
	stop  chan struct{} // closed by release
	done  chan struct{} // closed when watch returns

	mu      sync.Mutex
	conn    *pgx.Conn // nil while the lock is not held (between a break and the retake)
	checked time.Time // when conn was last seen whole
	once    sync.Once
}

// whole reports whether the lock is held: the connection is there and is
// seen whole by a look that ended after since — its own (pgconn's
// CheckConn: no round trip, a read of at most 1 ms), or one that was under
// way when it was called, so concurrent claims share one look. A broken
// connection is closed, for the watchdog to take the lock again.
func (h *livenessHold) whole(since time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conn == nil {
		return false
	}
	if h.checked.After(since) {
		return true
	}
	if h.conn.PgConn().CheckConn() != nil || h.conn.PgConn().IsClosed() {
		// Broken (or the server said goodbye): close our end; the lock
		// is gone with the session, or will be once the server notices.
		_ = h.conn.Close(context.Background())
		h.conn = nil
		return false
	}
	h.checked = time.Now()
	return true
}

// watch checks the connection every interval and retakes the lock when the
// connection is gone.
func (h *livenessHold) watch(every time.Duration) {
	defer close(h.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-tick.C:
		}
		if h.whole(time.Now()) || h.store.closed.Load() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), every+5*time.Second)
		conn, locked, err := h.store.takeLiveness(ctx, h.key)
		cancel()
		if err != nil || !locked {
			continue // the database is unreachable, or still holds the old session: next tick
		}
		h.mu.Lock()
		h.conn, h.checked = conn, time.Now()
		h.mu.Unlock()
	}
}

func (h *livenessHold) release() {
	h.once.Do(func() {
		close(h.stop)
		<-h.done
		h.store.liveHolds.Delete(h.key)
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.conn == nil {
			return
		}
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// Unlock first, so the lock is free when release returns; closing
		// alone frees it only once the server has ended the session.
		_, _ = h.conn.Exec(cctx, `SELECT pg_advisory_unlock($1)`, h.key)
		_ = h.conn.Close(cctx)
		h.conn = nil
	})
}
