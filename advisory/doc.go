// Package advisory runs work under PostgreSQL session-level advisory locks:
// a lightweight guard per job name (docs/design.md, "The advisory-lock
// guard"), kept beside cronfence's leases for the cases where a lock that
// needs no schema is enough.
//
//	g := advisory.New(pool)
//	ran, err := g.Do(ctx, "nightly-report", func(ctx context.Context) error {
//		return report(ctx)
//	})
//	// ran == false, err == nil: another session holds the lock; skip this tick.
//
// Do takes pg_try_advisory_lock on one connection it keeps out of the pool for
// the whole call, runs the function, and unlocks on that same connection:
// lock, work and unlock happen in one database session. When the lock is busy
// it returns at once without running anything; the next tick tries again.
// When the unlock fails, or finds the lock not held, the connection is closed
// rather than returned to the pool, since ending the session is the one sure
// way to free its locks. Each running Do therefore holds one pool connection:
// size the pool for the number of guarded functions that may run at once.
//
// # Keys
//
// Key maps a name to the 64-bit key PostgreSQL locks: the first 8 bytes of
// SHA-256("cronfence/advisory:" + name), big-endian, read as a signed int64.
// The derivation is part of the contract: two versions of a program that
// derive keys differently do not exclude each other. To see who holds a
// name's lock, compute the key in SQL and look it up in pg_locks:
//
//	SELECT l.pid, a.application_name, a.client_addr, a.backend_start
//	FROM pg_locks l JOIN pg_stat_activity a USING (pid)
//	WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
//	  AND (l.classid::bigint << 32 | l.objid::bigint) =
//	      ('x' || encode(substr(sha256(convert_to('cronfence/advisory:' || 'NAME', 'UTF8')), 1, 8), 'hex'))::bit(64)::bigint;
//
// # Where this guard is weaker than cronfence's leases
//
// A lease is a row with an owner, an expiry in the database clock and a
// generation that fences writes. An advisory lock is none of these; it lives
// exactly as long as one server session. That brings five hazards:
//
//  1. Transaction-mode poolers break it. Behind PgBouncer (or any pooler) in
//     transaction or statement mode, the lock, the work and the unlock may
//     each run on a different server session: the lock stays held by a
//     session now serving another client, that client inherits it, and the
//     unlock frees nothing (Do then reports it and closes its connection,
//     which does not end the server session behind the pooler). Connect
//     directly or through a pooler in session mode.
//  2. No expiry. A host cut off by a partition keeps its session, and so its
//     lock, until the server notices the dead TCP connection through
//     keepalives or tcp_user_timeout: minutes when those are tuned, over two
//     hours with Linux's defaults. A process whose function hangs keeps a
//     healthy connection, and the lock, until it is killed. Meanwhile no
//     replica runs the work. A lease expires after its TTL, by the database
//     clock.
//  3. No fencing token. When the holder's session dies while its function is
//     still running (pg_terminate_backend, a connection reset, a server
//     restart, or idle_session_timeout, which counts the session as idle
//     while the function works), the lock is free at once and another
//     process takes it: both run. Do does not notice until its unlock fails
//     at the end, and the protected resource cannot tell the old holder's
//     writes from the new one's. A lease's generation, checked inside the
//     write transaction, refuses the old holder's writes.
//  4. A shared key space. Every advisory lock in the database, taken by any
//     application or extension, draws from the same 64-bit keys. The hashed,
//     prefixed key makes an accidental clash with another program's keys
//     unlikely, but nothing prevents it. And session locks are re-entrant:
//     code sharing Do's pool that takes a key and returns its connection to
//     the pool still locked makes a later Do on that connection succeed while
//     that code believes it holds the lock.
//  5. No memory of completed windows. Do excludes concurrent runs only: a fast
//     job finishes and unlocks, and a replica whose timer fires a little late
//     takes the free lock and runs the same window again. Cronfence's slot
//     claims record each window once it completes.
//
// It is still the right tool for a quick guard around a job where running
// twice now and then is harmless or caught downstream, when no schema may be
// created, or when the lock must vanish the instant a process dies (a crash
// closes the socket and the server frees the lock at once, with no TTL to
// wait out). Where a double run costs money or corrupts data, use
// cronfence's leases and slot claims.
package advisory
