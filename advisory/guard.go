package advisory

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cronfence/cronfence/store"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"
)

const (
	// unlockTimeout bounds the unlock round trip. It is not tied to the
	// caller's context, which is often cancelled by the time fn returns (a
	// shutdown): an unlock skipped for that reason would cost a connection.
	unlockTimeout = 10 * time.Second

	// closeTimeout bounds saying goodbye to a server on a connection being
	// destroyed; the socket is closed either way.
	closeTimeout = 5 * time.Second
)

// Guard runs work under per-name, session-level PostgreSQL advisory locks.
// It is safe for concurrent use. See the package documentation for where it
// is weaker than cronfence's leases.
type Guard struct {
	pool *pgxpool.Pool
}

// New returns a Guard taking its connections from pool, which must reach
// PostgreSQL directly or through a pooler in session mode.
func New(pool *pgxpool.Pool) *Guard {
	return &Guard{pool: pool}
}

// Do runs fn while holding the advisory lock of name, taken with
// pg_try_advisory_lock(Key(name)) on one connection acquired from the pool for
// the whole call. If another session holds the lock, Do returns (false, nil)
// without running fn. Otherwise it runs fn and unlocks on the same
// connection, and returns true with fn's error, joined with the unlock's if
// that failed too. The lock is released when fn returns, fails or panics (the
// panic continues after the unlock).
//
// If the unlock fails or finds the lock not held, the connection is closed
// instead of going back to the pool, so the server ends the session and frees
// whatever it held. Such an error after a successful fn means the lock may
// have been lost while fn ran: see "No fencing token" in the package
// documentation.
//
// fn's context is ctx: Do does not cancel it when the lock is lost.
func (g *Guard) Do(ctx context.Context, name string, fn func(ctx context.Context) error) (ran bool, err error) {
	if err := store.ValidateName("advisory lock name", name); err != nil {
		return false, fmt.Errorf("advisory: %w", err)
	}
	if fn == nil {
		return false, fmt.Errorf("advisory: lock %q: fn must not be nil: %w", name, store.ErrInvalidArgument)
	}
	if g == nil || g.pool == nil {
		return false, fmt.Errorf("advisory: lock %q: Guard has no pool; build it with New: %w", name, store.ErrInvalidArgument)
	}
	key := Key(name)

	conn, err := g.pool.Acquire(ctx)
	if err != nil {
		return false, wrap(name, "acquiring a connection", err)
	}
	var locked bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&locked); err != nil {
		// The server may have granted the lock before the error reached us
		// (a cancelled context, a dropped reply): only ending the session
		// is sure to leave nothing held.
		destroy(conn)
		return false, wrap(name, "taking the lock", err)
	}
	if !locked {
		conn.Release()
		return false, nil
	}

	// Deferred so that a panic or runtime.Goexit in fn unlocks too.
	defer func() {
		if uerr := unlock(ctx, conn, name, key); uerr != nil {
			if err == nil {
				err = uerr
			} else {
				err = errors.Join(err, uerr)
			}
		}
	}()
	return true, fn(ctx)
}

// unlock releases key on the session that took it and hands the connection
// back to the pool. When it cannot show the lock is gone, it closes the
// connection instead: a pooled session still holding the lock would keep it
// held for as long as the pool keeps the connection.
func unlock(ctx context.Context, conn *pgxpool.Conn, name string, key int64) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
	defer cancel()
	var held bool
	if err := conn.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", key).Scan(&held); err != nil {
		destroy(conn)
		return fmt.Errorf("advisory: lock %q: unlocking failed, so the connection was closed to end its session (the lock may have been lost while the function ran): %w", name, err)
	}
	if !held {
		// Only a session swapped under us (a transaction-mode pooler) or
		// code unlocking behind our back gets here.
		destroy(conn)
		return fmt.Errorf("advisory: lock %q (key %d) was not held by its session at unlock, so the connection was closed; is a pooler in transaction mode between this process and PostgreSQL? Connect directly or in session mode", name, key)
	}
	conn.Release()
	return nil
}

// destroy takes conn out of the pool and closes it, which ends the server
// session and frees every advisory lock the session held.
func destroy(conn *pgxpool.Conn) {
	c := conn.Hijack()
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	_ = c.Close(ctx) // closes the socket even when saying goodbye fails
}

// wrap prefixes a database error with the lock and the step that failed, and
// turns a closed pool into store.ErrClosed, as every cronfence store does.
func wrap(name, step string, err error) error {
	if errors.Is(err, puddle.ErrClosedPool) {
		return fmt.Errorf("advisory: lock %q: %s: the pool is closed: %w", name, step, store.ErrClosed)
	}
	return fmt.Errorf("advisory: lock %q: %s: %w", name, step, err)
}
