package mysql

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"fmt"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cronfence/cronfence/store"
)

var _ store.Liveness = (*Store)(nil)

// livenessKey derives the key of an owner's liveness lock. Named locks are
// server-wide, so the key covers the database and the prefix: two
// installations on one server do not read each other's owners.
func (s *Store) livenessKey(owner string) int64 {
	h := fnv.New64a()
	h.Write([]byte("cronfence.live:" + s.database + "\x00" + s.prefix + "\x00" + owner))
	return int64(h.Sum64())
}

// liveLockName is the GET_LOCK name of a liveness key, as the store's SQL
// spells it: CONCAT('cronfence.live.', live_key).
func liveLockName(key int64) string { return fmt.Sprintf("cronfence.live.%d", key) }

// LivenessHold takes a named lock (GET_LOCK) for owner on a connection of
// its own, held for the life of the hold. While the process lives, that
// session and its lock live; when the process dies, the server ends the
// session and frees the lock, and contenders may take the owner's leases
// over at once (IS_FREE_LOCK in the claim).
//
// The connection can also break while the process lives (a network cut, a
// server restart). Every lease this owner holds then looks like a dead
// owner's and may be taken over: its renewals fail, its work is
// cancelled, and fencing refuses its writes, so nothing unsafe happens. So
// the hold checks its connection every Config.LivenessCheckEvery and, once
// the lock is no longer its own, takes it again on a new connection. Until
// then, leases this store acquires or claims record no key (see
// liveKeyArg) and wait for their TTL.
//
// release unlocks and closes the connection (a graceful shutdown hands the
// leases over at once). It is safe to call more than once.
func (s *Store) LivenessHold(ctx context.Context, owner string) (key int64, release func(), err error) {
	if err := store.ValidateName("owner", owner); err != nil {
		return 0, nil, err
	}
	if s.closed.Load() {
		return 0, nil, closedError("liveness hold")
	}
	key = s.livenessKey(owner)
	conn, locked, err := s.takeLiveness(ctx, key)
	if err != nil {
		return 0, nil, s.errorf(err, "liveness hold of owner %q", owner)
	}
	if !locked {
		return 0, nil, fmt.Errorf("mysql: the liveness lock of owner %q is held by another session: owner ids must be unique per process", owner)
	}
	h := &livenessHold{store: s, key: key, conn: conn, stop: make(chan struct{}), done: make(chan struct{})}
	h.held.Store(true)
	s.liveHolds.Store(key, h)
	go h.watch(s.livenessCheckEvery)
	return key, h.release, nil
}

// takeLiveness takes the lock of key, without waiting, on a new connection
// of the store's pool that it keeps out of the pool.
func (s *Store) takeLiveness(ctx context.Context, key int64) (*sql.Conn, bool, error) {
	conn, err := s.own.Conn(ctx)
	if err != nil {
		return nil, false, err
	}
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, `SELECT GET_LOCK(?, 0)`, liveLockName(key)).Scan(&got); err != nil {
		_ = conn.Raw(func(any) error { return errBadConn })
		_ = conn.Close()
		return nil, false, err
	}
	if got.Int64 != 1 {
		_ = conn.Close()
		return nil, false, nil
	}
	return conn, true, nil
}

// errBadConn, returned from conn.Raw, makes database/sql discard the
// connection rather than pool it.
var errBadConn = fmt.Errorf("discard: %w", sqldriver.ErrBadConn)

// liveKeyArg is the live key a lease acquisition or claim records: key
// while this store's hold of that lock is known whole, 0 while it is not.
// A key this store does not hold is passed on as the caller gave it.
func (s *Store) liveKeyArg(key int64) int64 {
	if key == 0 {
		return 0
	}
	h, ok := s.liveHolds.Load(key)
	if !ok || h.(*livenessHold).held.Load() {
		return key
	}
	return 0
}

// livenessHold is one liveness lock this store holds.
type livenessHold struct {
	store *Store
	key   int64

	mu   sync.Mutex // guards conn
	conn *sql.Conn

	held atomic.Bool // conn holds the lock, as last checked

	// stop ends the watch. It is a channel, not a context that queries
	// run under: cancelling a query makes the driver drop its connection,
	// and the server frees that session's lock only when it notices, so
	// release would return with the lock still held. A check in flight
	// finishes (within checkTimeout) before release unlocks.
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// checkTimeout bounds each query of the watch: a check, or taking the lock
// again.
const checkTimeout = 5 * time.Second

// watch checks the hold every period and takes the lock again when its
// connection lost it, until release.
func (h *livenessHold) watch(period time.Duration) {
	defer close(h.done)
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-tick.C:
		}
		h.mu.Lock()
		ok := h.conn != nil && h.stillHeld()
		h.mu.Unlock()
		if ok {
			h.held.Store(true)
			continue
		}
		h.held.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
		conn, locked, err := h.store.takeLiveness(ctx, h.key)
		cancel()
		if err != nil || !locked {
			continue // the server may not have ended the old session yet
		}
		h.mu.Lock()
		if h.conn != nil {
			_ = h.conn.Raw(func(any) error { return errBadConn })
			_ = h.conn.Close()
		}
		h.conn = conn
		h.mu.Unlock()
		h.held.Store(true)
	}
}

// stillHeld asks, on the hold's connection, whether that very session holds
// the lock. Called with mu held.
func (h *livenessHold) stillHeld() bool {
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	defer cancel()
	var mine sql.NullBool
	err := h.conn.QueryRowContext(ctx, `SELECT IS_USED_LOCK(?) = CONNECTION_ID()`, liveLockName(h.key)).Scan(&mine)
	return err == nil && mine.Valid && mine.Bool
}

// release unlocks, closes the connection and stops the watch.
func (h *livenessHold) release() {
	h.once.Do(func() {
		close(h.stop)
		<-h.done
		h.store.liveHolds.Delete(h.key)
		h.held.Store(false)
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.conn == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
		defer cancel()
		_, _ = h.conn.ExecContext(ctx, `DO RELEASE_LOCK(?)`, liveLockName(h.key))
		// Not back to the pool: a session that held a named lock is
		// closed, so nothing it held can linger.
		_ = h.conn.Raw(func(any) error { return errBadConn })
		_ = h.conn.Close()
		h.conn = nil
	})
}
