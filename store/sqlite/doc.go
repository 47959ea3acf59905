// Package sqlite is a cronfence store on a SQLite file (modernc.org/sqlite,
// no cgo), for replicas that share one host.
//
// # One host, one writer
//
// Every process that coordinates through the store opens the same file. The
// store relies on three properties of SQLite on one host:
//
//   - Writers are serialized. Every transaction the store begins is
//     BEGIN IMMEDIATE (the DSN sets _txlock=immediate), so it takes the
//     database's single write lock before its first read and holds it to the
//     end. A read followed by a write inside such a transaction is therefore
//     as atomic as the single statements the PostgreSQL store needs.
//     Writers of one Store queue in Go, so a burst of claims is served in
//     order without polling. Writers of other processes (other Stores) can
//     only poll the lock: the store's own writes retry it every millisecond
//     or two, rather than on SQLite's back-off to 100ms, so that many
//     replicas contending at the same instant do not leave it idle. Either
//     wait lasts at most Config.BusyTimeout.
//   - Readers do not block the writer. The file is in WAL mode, so LeaseGet,
//     RunList and the other reads run beside a write transaction, and a
//     handler's long transaction never stalls the dashboard.
//   - The clock is shared. All processes read the same system clock, so the
//     process clock is the database clock: "now" is time.Now() unless a
//     params struct pins it with a non-zero Now, or Config.NowFunc replaces
//     it (for tests that move a cluster's time by hand; fences use it too).
//
// # No liveness takeover
//
// The PostgreSQL store implements store.Liveness: a process holds an
// advisory lock on a session of its own, and a contender takes over the
// leases of an owner whose session ended without waiting for their expiry.
// This store does not: SQLite has no server, so there is no session whose
// end marks a dead process. A dead owner's lease waits for its TTL: all
// processes are on this host, and the TTL bounds the wait. A Store does not
// implement store.Liveness, and SlotClaimParams.LiveKey is accepted and
// ignored (stored nowhere).
//
// # Claims, overlap and pause
//
// SlotClaimBatch runs every item of a batch, one after another, in one
// immediate transaction, with the gate order of the PostgreSQL store: not
// due; paused (the job's override in cronfence_job_state, else its declared
// value); completed; skipped; running under a live lease; out of attempts.
// An item that passes takes the job's lease. If another run holds it (the
// previous slot's, or a manual run's), the claim is refused naming the
// holder, and a slot that has no row yet is recorded, once across replicas
// since the write lock serializes them: buffered when the overlap policy is
// buffer-one and the job has no buffered slot yet, else skipped, with a skip
// run row naming the holder. A skipped slot is final; a buffered one waits
// until SlotFinish of the run that held the lease reports it, to be claimed
// then. A due slot of a paused job is refused paused and, when it has no
// row yet, recorded skipped without a run row, so a claim arriving after
// the resume is refused skipped instead of running it. SlotFinish with a
// zero slot ends a manual run: lease and run row only; a finish whose slot
// was taken over writes its run row with success false and the takeover in
// its error. The transaction holds the write lock from BEGIN, so no finisher can
// slip in between a claim's reads and its writes, and a claim never gives a
// lease back.
//
// # Storage
//
// Every instant is an INTEGER of Unix microseconds, UTC, the precision of a
// PostgreSQL timestamptz, so both stores round the same way. Times returned
// are UTC with microsecond precision; slot instants are normalised the same
// way before they become keys, so two replicas that compute the same
// occurrence in different time zones claim the same row. Run logs are a
// JSON array in a TEXT column.
//
// The store's tables are cronfence_leases, cronfence_slots (with the
// partial index cronfence_slots_buffered on buffered slots),
// cronfence_job_state (the pause override of each job: 1, 0 or NULL to
// follow the declared value, with who, when and a note), cronfence_runs,
// cronfence_replicas (the replica registry, each replica's jobs a JSON
// array), cronfence_alerts (with the partial unique index
// cronfence_alerts_open: one open alert per kind and subject) and
// cronfence_schema_migrations; every name it gives a schema object begins
// with cronfence_, so a handler's own tables in the file (one called runs,
// say) never collide with it. Leave that prefix to the store.
//
// Open does not change the schema; Migrate applies the embedded migrations,
// each in its own immediate transaction, and records them in
// cronfence_schema_migrations. Until then every call fails with a
// *store.SchemaVersionError wrapping store.ErrSchemaOutdated.
//
// # Fencing a handler's own writes
//
// DB returns the store's connection pool so a handler can write its data to
// the same file and fence it:
//
//	tx, err := st.DB().BeginTx(ctx, nil) // BEGIN IMMEDIATE
//	...
//	if err := st.LeaseFence(ctx, tx, run.LeaseName, run.Generation); err != nil {
//		return err // lost the lease: write nothing
//	}
//	// write, then tx.Commit()
//
// LeaseFence accepts a *sql.Tx on this file. An immediate transaction holds
// the write lock from BEGIN, so once the fence has seen the lease unexpired
// no takeover can commit until the transaction ends: the handler's writes
// land before any successor's, which is what FOR KEY SHARE gives on PostgreSQL.
// A deferred transaction (a *sql.Tx from a pool opened without
// _txlock=immediate, or with sql.TxOptions.ReadOnly) is still safe in WAL
// mode: if a takeover commits after the fence read, the transaction's first
// write fails with SQLITE_BUSY_SNAPSHOT instead of landing. A fence protects
// only writes to this file.
//
// What this store shares with the MySQL store, whose tables have the same
// columns, is in store/internal/sqlstore: the decoding of the rows, the
// claim gate's and the finish's rules around the SQL, the run row's
// defaults. The SQL, the transactions and the clock are this package's own.
package sqlite
