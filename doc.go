// Package cronfence is distributed cron for Go: every scheduled slot of every
// job runs once across any number of replicas, coordinated through a SQL
// database (PostgreSQL or MySQL/MariaDB across hosts, a SQLite file on one
// host).
//
// Build a Scheduler from a Config and a store, Register jobs (the same on
// every replica), Start it, and Stop it on shutdown. Lock runs any function
// under a renewed lease, outside the scheduler; it guards overlap only.
// LockSlot runs a function once per slot of a schedule across every host
// that calls it (a crontab line on several hosts), through the scheduler's
// slot registry.
//
// # Guarantees
//
// Numbered as in docs/design.md, which also has the data model, the state
// machines and how a slot flows through the code:
//
//   - G1: a slot runs once across replicas. At each fire a replica claims
//     every job due at that instant in one round trip (the pause state read
//     and the lease taken in the same statement); only the claim's winner
//     runs the handler.
//   - G2: no eternal lock. Every lease expires in the database clock and is
//     renewed every TTL/3 while its run lasts (one batched round trip for
//     all the leases a replica holds); a dead owner is replaced within one
//     TTL, and on PostgreSQL and MySQL at once, when its liveness session
//     is gone.
//   - G3: a paused or partitioned owner cannot write after losing its
//     lease. The generation of a lease name grows forever and Run.Fence
//     checks it inside the write transaction, holding the lease row against
//     a takeover until commit.
//   - G4: a completed window never runs again; an interrupted one resumes
//     with one more attempt, up to Job.MaxAttempts. The slot is the
//     intended occurrence, never the start time. A run whose handler
//     returned keeps its lease renewed until its end is recorded, retrying
//     while the database does not answer, so only a dead or deposed owner's
//     slot is resumed. Run.Complete (SQL: complete()) marks the slot
//     completed inside the handler's own write transaction, so the effect
//     and the completion commit together: a slot whose effect committed is
//     never run again, even when its process stops before the scheduler
//     records the run's end.
//   - G5: a slot missed during a restart or a store outage runs once, when
//     the job has a CatchUpWindow, and never one from before the job was
//     first registered: the most recent one (CatchUpLatest, the default),
//     or every slot of the window that nobody claimed, oldest first, one
//     after another (CatchUpAll, bounded by MaxCatchUp).
//   - G6: pause and resume (SetEnabled) reach every replica at its next
//     fire and survive restarts; a slot that comes due while its job is
//     paused is settled as skipped and never runs, even after the resume;
//     it is recorded as a skipped run with reason "paused", once across
//     replicas.
//   - G7: overlap is visible: a slot that comes due while a run holds the
//     job's lease is recorded as a skipped run naming the holder, once
//     across replicas; Trigger meets ErrAlreadyExecuting. A slot whose
//     lease was taken only after it came due (by a catch-up or resumed run
//     of an earlier slot) did not overlap: it waits for that run and runs
//     after it.
//   - G8: replica clocks do not matter: expiry and "due" come from the
//     database clock; a replica whose clock runs ahead cannot claim early.
//   - G9: absence is noticed: one replica at a time runs the absence checks
//     (a deadline missed, a lease held too long, a skip streak, a slow run,
//     config drift, an orphan job, a clock offset) and raises each alert
//     once across replicas, to the log, the Observer, the store's alerts;
//     a deposed writer sitting on an expired lease is raised by the
//     scheduler that meets it (docs/alerts.md).
//   - G10: history stays bounded: one replica at a time prunes runs and
//     claims older than Config.Retention, keeping each job's latest claim.
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
//
// # Fencing is not completion
//
// A fence refuses a writer that lost its lease. It does not stop a writer
// whose effect committed from being run again: if its process stops (is
// killed, frozen, cut off) after the commit and before the scheduler
// records the run's end, the slot still looks unfinished, and once the
// lease expires another replica resumes it. Complete the slot in the same
// transaction as the effect (Run.Complete, or the SQL function complete())
// and the slot is completed exactly when the effect is. See docs/fencing.md
// for lease names and the SQL functions.
package cronfence
