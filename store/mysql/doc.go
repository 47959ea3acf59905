// Package mysql is the cronfence store on MySQL 8.0+ and MariaDB 10.6+,
// through database/sql and github.com/go-sql-driver/mysql. It passes the
// same conformance suite (store/storetest) as the PostgreSQL and SQLite
// stores and keeps the same promises: one claim per (job, slot), leases
// timed by the database clock, generations that never go back, fences
// that hold a takeover until the fenced transaction commits.
//
// # Transactions
//
// MySQL has no data-modifying WITH and no RETURNING on UPDATE, so an
// operation that PostgreSQL does in one statement is a short transaction
// here, on connections of the store's own set to READ COMMITTED (each
// statement reads what has committed):
//
//   - A claim (SlotClaimBatch) locks its items' lease rows FOR UPDATE, in
//     name order, before anything else: every claim, acquisition and
//     finish of a lease waits there for the one before it, and then reads
//     what that one wrote. The lock, the clock, the slots and the pause
//     overrides go in one query (the store's connections allow several
//     statements a query; every argument is escaped by the driver); the
//     writes of the items taken in another: 4 round trips for a claim of
//     one slot that wins, BEGIN and COMMIT included (docs/mysql.md counts
//     the others).
//   - Every transaction locks lease rows before slot rows, in name order,
//     so they do not deadlock over them. Should InnoDB still choose a
//     deadlock victim, or a write find a row that a writer without the
//     lease row's lock inserted since it was read (a skip, the first
//     claim of a lease that had no row yet), the transaction runs again.
//
// # Time
//
// Instants are DATETIME(6) in UTC. Every "now" is the database clock,
// UTC_TIMESTAMP(6), read inside the operation's transaction after its
// locks (or, with Config.NowFunc, a test's clock).
//
// # Fencing
//
// LeaseFence and SlotComplete take a *sql.Tx (from DB(), or any pool on
// the database) and read the lease row in share mode (FOR SHARE on MySQL,
// LOCK IN SHARE MODE on MariaDB): a takeover, which locks the row for
// update, waits for the fenced transaction to commit. A claim waits for
// such a lock at most Config.LockWait and, when the lease's holder is
// gone, answers store.ClaimLeaseBusy instead of waiting longer. Clients
// other than Go call the procedures cronfence_fence(lease, generation) and
// cronfence_complete(lease, generation), which raise SQLSTATE CF001 when
// the generation no longer holds the lease.
//
// # Liveness
//
// A replica's liveness is a named lock, GET_LOCK('cronfence.live.<key>'),
// held by a connection of its own (LivenessHold). A lease records the key;
// when the process dies the server ends its session and frees the lock,
// and IS_FREE_LOCK lets a contender take the lease over at once instead
// of waiting for its TTL.
//
// # Migrations
//
// Migrate applies the embedded migrations under a named lock, so replicas
// starting together take turns. DDL commits statement by statement in
// MySQL; the migrations are idempotent, and one cut off halfway is
// completed by the next run.
//
// What this store does not have, beside PostgreSQL: notices (every replica
// claims every slot it fires, as on SQLite; see docs/design.md, "Who
// claims"), and the generation floor that keeps a token unique across a
// promoted standby (see docs/failover.md): run a single writable primary.
//
// What it shares with the SQLite store, whose tables have the same columns,
// is in store/internal/sqlstore: the decoding of the rows, the claim gate's
// and the finish's rules around the SQL, the run row's defaults. The SQL,
// the transactions and the clock are this package's own.
package mysql
