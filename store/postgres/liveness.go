package postgres

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync"
	"sync/atomic"
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
// owner's leases over at once (see sql/slotClaim.sql).
//
// The connection can also break while the process lives (a network cut, a
// database restart, a terminated backend). Every claim this owner makes then
// looks like a dead owner's, and is taken over at once. So the hold keeps a
// read waiting on its idle connection, which returns the moment the server
// ends the session (no round trip, no polling), and then takes the same lock
// again on a new connection every Config.LivenessCheckEvery until it has it
// (the server may not have ended the old session yet). Between the break and
// the new lock, contenders may take this owner's older leases: its renewals
// then affect no row and its work is cancelled, and fencing refuses its
// writes, so nothing unsafe happens; only runs are cut short. Leases this
// store acquires or claims in that time record no key (see liveKeyArg), so
// they wait for their TTL instead.
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
	h := &livenessHold{store: s, key: key, conn: raw, done: make(chan struct{})}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.held.Store(true)
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
	if !v.(*livenessHold).held.Load() {
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
	store  *Store
	key    int64
	ctx    context.Context // cancelled by release
	cancel context.CancelFunc
	done   chan struct{} // closed when watch returns
	held   atomic.Bool   // the lock is held: conn is there and its session stands
	once   sync.Once

	// conn is watch's alone, and release's once watch has returned; nil
	// while the lock is not held (between a break and the retake).
	conn *pgx.Conn

	mu   sync.Mutex
	move context.CancelFunc // ends watch's wait on conn, to take the lock again elsewhere (see moveLiveness)
}

// watch waits on the connection for its session to end, and then takes the
// lock again every interval until it has it. The wait is a read on the idle
// connection: nothing arrives on it while the session stands, so the read
// returns only with the server's goodbye (a FATAL message, the end of the
// stream) or an error, the moment they come — no polling, and nothing for
// a claim to wait on (see liveKeyArg).
func (h *livenessHold) watch(every time.Duration) {
	defer close(h.done)
	for {
		if h.conn != nil {
			wait, move := context.WithCancel(h.ctx)
			h.mu.Lock()
			h.move = move
			h.mu.Unlock()
			awaitEnd(wait, h.conn)
			move()
			if h.ctx.Err() != nil {
				return // released: release unlocks and closes
			}
			h.held.Store(false)
			// Close our end; the lock is gone with the session, or will be
			// once the server notices.
			_ = h.conn.Close(context.Background())
			h.conn = nil
		}
		select {
		case <-h.ctx.Done():
			return
		case <-time.After(every):
		}
		if h.store.closed.Load() {
			continue
		}
		ctx, cancel := context.WithTimeout(h.ctx, every+5*time.Second)
		conn, locked, err := h.store.takeLiveness(ctx, h.key)
		cancel()
		if err != nil || !locked {
			continue // the database is unreachable, or still holds the old session: next interval
		}
		h.conn = conn
		h.held.Store(true)
	}
}

// moveLiveness makes every liveness hold give its connection up and take
// its lock again on a new one, as after a break. The store calls it when a
// write was refused as read-only: the server it reached is a standby or a
// primary demoted by a failover, and the holds' sessions, which never
// write, would otherwise stay on it, their locks invisible to the new
// primary (every lease of this owner would look like a dead owner's there,
// and be taken over at once). The pool was reset first, so the new
// connections follow the URL to the writable host.
func (s *Store) moveLiveness() {
	s.liveHolds.Range(func(_, v any) bool {
		h := v.(*livenessHold)
		h.mu.Lock()
		if h.move != nil {
			h.move()
		}
		h.mu.Unlock()
		return true
	})
}

// awaitEnd reads the idle connection conn until its session ends or ctx
// does. A cancelled read leaves conn usable (pgconn closes a connection on
// any read error but a timeout, which is how cancelling ends a read).
func awaitEnd(ctx context.Context, conn *pgx.Conn) {
	for ctx.Err() == nil {
		if _, err := conn.PgConn().ReceiveMessage(ctx); err != nil || conn.PgConn().IsClosed() {
			return
		}
		// A message that does not end the session (a notice): read on.
	}
}

func (h *livenessHold) release() {
	h.once.Do(func() {
		h.cancel()
		<-h.done
		h.store.liveHolds.Delete(h.key)
		h.held.Store(false)
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
