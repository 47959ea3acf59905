package postgres

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"

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
// owner's leases over at once (see slotClaimSQL). If the connection breaks
// while the process lives, contenders may take its leases too: the owner's
// next renewal then affects no row and its work is cancelled, and fencing
// refuses its writes, so nothing unsafe happens; only a run is cut short.
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
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0, nil, s.translate("acquire the liveness connection", err)
	}
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&locked); err != nil {
		conn.Release()
		return 0, nil, s.translate("take the liveness lock", err)
	}
	if !locked {
		conn.Release()
		return 0, nil, fmt.Errorf("postgres: the liveness lock of owner %q is held by another session: owner ids must be unique per process", owner)
	}
	// The connection never goes back to the pool: closing it is what ends
	// the session and frees the lock.
	raw := conn.Hijack()
	done := false
	release = func() {
		if done {
			return
		}
		done = true
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// Unlock first, so the lock is free when release returns; closing
		// alone frees it only once the server has ended the session.
		_, _ = raw.Exec(cctx, `SELECT pg_advisory_unlock($1)`, key)
		_ = raw.Close(cctx)
	}
	return key, release, nil
}
