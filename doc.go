// Package cronfence is distributed cron for Go: every scheduled slot of every
// job runs once across any number of replicas, coordinated through a SQL
// database (PostgreSQL across hosts, a SQLite file on one host).
//
// This release holds the foundation the scheduler stands on: leases with
// fencing tokens and Lock, which runs any function under a renewed lease.
//
// # Guarantees
//
// The design guarantees are numbered as in the project's DESIGN.md; those
// marked (core) hold in this package today.
//
//   - G1: a slot runs once across replicas: one claim row per (job, slot),
//     taken in one atomic statement; only its winner runs (core: see
//     store.Store.SlotClaim).
//   - G2: no eternal lock (core): every lease expires in the database clock
//     and is renewed every TTL/3 while its work runs; a dead owner is
//     replaced within one TTL.
//   - G3: a paused or partitioned owner cannot write after losing its lease
//     (core): the generation of a lease name grows forever (release expires
//     the row, never deletes it) and Lease.Fence checks it inside the write
//     transaction, holding the lease row against a takeover until commit.
//   - G4: a completed window never runs again; an interrupted one can resume
//     with one more attempt (core: see store.Store.SlotClaim).
//   - G8: replica clocks do not matter (core): expiry and "now" come from the
//     database.
//   - G10: history stays bounded (core: store.Store.Prune keeps each job's
//     latest claim).
//
// # Choosing a TTL
//
// A lease's TTL should be several times the worst delay a renewal can meet
// (database latency, GC pauses, CPU throttling) and short enough that
// replacing a dead owner does not delay the work much. Sixty to a hundred and
// twenty seconds, renewed every third, suits most business jobs. A TTL of a
// few seconds turns any slow query into a change of owner; one of half an
// hour brings back the eternal lock at a smaller scale.
//
// # Cancellation is not fencing
//
// The context handed to work under a lease is cancelled the moment the lease
// is lost. A process that is paused (a long GC, a frozen VM) does not see
// that: it wakes up and runs its next line, which may be a write. Only a
// fence inside the write's own transaction closes that window; a
// unique constraint or an idempotency key on the effect is the last layer.
package cronfence
