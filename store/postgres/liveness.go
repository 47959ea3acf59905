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
// runs are cut short.
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
	h := &livenessHold{store: s, key: key, conn: raw, stop: make(chan struct{}), done: make(chan struct{})}
	go h.watch(s.livenessCheckEvery)
	return key, h.release, nil
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

	mu   sync.Mutex
	conn *pgx.Conn // nil while the lock is not held (between a break and the retake)
	once sync.Once
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
		h.mu.Lock()
		if h.conn != nil && h.conn.PgConn().CheckConn() != nil {
			// Broken (or the server said goodbye): close our end; the lock
			// is gone with the session, or will be once the server notices.
			_ = h.conn.Close(context.Background())
			h.conn = nil
		}
		broken := h.conn == nil
		h.mu.Unlock()
		if !broken || h.store.closed.Load() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), every+5*time.Second)
		conn, locked, err := h.store.takeLiveness(ctx, h.key)
		cancel()
		if err != nil || !locked {
			continue // the database is unreachable, or still holds the old session: next tick
		}
		h.mu.Lock()
		h.conn = conn
		h.mu.Unlock()
	}
}

func (h *livenessHold) release() {
	h.once.Do(func() {
		close(h.stop)
		<-h.done
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
