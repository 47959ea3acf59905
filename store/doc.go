// Package store is the boundary between cronfence and its databases: the
// Store interface, its row and parameter types, validation shared by every
// store, and the errors callers check with errors.Is. It imports the standard
// library only; each database lives in a package below (postgres, sqlite) and
// every one of them passes the conformance suite in storetest.
//
// # Leases
//
// A lease is a named row with an owner, a generation and an expiry in the
// database clock. Its life:
//
//	          LeaseAcquire (free or expired)
//	(none) ──────────────────────────────────▶ held by O at generation g
//	                                             │  │
//	       LeaseRenew by O at g before expiry ◀──┘  │ LeaseRelease by O at g,
//	       (extends expires_at)                     │ or time passes
//	                                                ▼
//	                                           expired (row kept)
//	                                                │ LeaseAcquire by anyone
//	                                                ▼
//	                                           held by O' at g+1
//
// Acquisition is one atomic statement; renewal is conditioned on owner,
// generation and not yet expired, and release on owner and generation, so a
// process that lost its lease while paused can neither extend it nor expire
// its successor's. Rows are never deleted: the generation of a name grows
// forever and serves as a fencing token. LeaseFence checks the generation
// inside the caller's write transaction and holds the lease row against a
// takeover until that transaction ends.
//
// # Slots
//
// A slot is one intended occurrence of a job (the instant the schedule
// named, never the time a run started). Its claim row:
//
//	(none) ──SlotClaim──▶ running ──SlotFinish──────────────▶ completed   (final)
//	  │                     │   ▲        │  └──SlotComplete in the
//	  │                     │   │        │     handler's transaction ──▶ completed
//	  │                     │   │        └──────▶ failed
//	  │    lease expired ───┘   └── SlotClaim while attempts < MaxAttempts
//	  │
//	  ├──SlotClaim, lease held by another run──▶ skipped (final) or buffered
//	  └──SlotClaim, job paused──────────────────▶ skipped (final)
//
// SlotClaim takes the guarding lease and the slot in one statement; a running
// slot whose lease has expired (its owner died or paused) and a failed slot
// may be claimed again with one more attempt, a completed one never. A slot
// that comes due while its job is paused is settled as skipped by the first
// claim that sees the pause, so it cannot run after the resume, whichever
// replica's claim arrives late. SlotFinish marks the slot, releases the
// lease and writes the run row in one round trip, all conditioned on the
// claim's owner and generation; the run row of a generation whose slot was
// taken over says so (not successful) rather than passing for its result.
// SlotComplete marks the slot completed inside the handler's own write
// transaction (after fencing it), so the effect and the completion commit
// together; the run's SlotFinish afterwards keeps it completed. SlotFinish
// may be called again after an attempt whose answer was lost: a holding
// (lease name, generation) has at most one run row of its own.
//
// A slot whose claim finds the lease held by a run that took it only after
// the slot came due is buffered, not skipped: the lease was free at the
// slot's instant, and it runs when that run ends (SlotFinish names it).
//
// # Stored schedules
//
// A stored schedule (Schedules) is a row of the schedules table with a
// version; every write of one also writes one row of its change log, in
// the same transaction:
//
//	ScheduleCreate ──▶ version 1 ──ScheduleUpdate at v──▶ version v+1 ──▶ …
//	   (new ID)            │                                  │
//	                       └──────ScheduleDelete at v (or any)┴──▶ (none); the log keeps it
//
// An update or delete at a version that is no longer the current one, and
// a create of a name that exists, write nothing (*ConflictError). A
// schedule deleted and created again is a new one: IDs are never used
// twice. The change log's sequence numbers are given out one by one by a
// single row that every write locks first, so they have no gaps and commit
// in order: a replica that read the log up to n has seen every change up
// to n, and follows the log from there (ScheduleChanges). On PostgreSQL
// each change is also told to every replica as it commits
// (NoticeSchedule).
package store
