// Package riverbridge enqueues River jobs from cronfence slots: durable
// periodic jobs for teams that already run River workers, where River's own
// periodic jobs live in its leader's memory.
//
// A bridged job is a cronfence job (Job, or Handler on a job with
// CompletesInTx) whose handler, for each run, begins a transaction on the
// database both cronfence's PostgreSQL store and River live in, inserts one
// River job with Client.InsertTx, completes the run's slot with
// cronfence.Run.Complete in the same transaction, and commits. The job's
// args embed the run's Slot: its key (job and slot), attempt and
// generation.
//
// # Exactly one River job per slot
//
// The insert and the slot's completion commit together or not at all:
//
//   - a replica that dies before the commit leaves neither: the server
//     rolls its transaction back, the slot is still running under a dead
//     owner, and a live replica resumes it (attempt 2; at once on
//     PostgreSQL, through the dead process's liveness lock), whose
//     transaction inserts the job;
//   - a replica that dies after the commit, before the scheduler recorded
//     the run's end, leaves both: the job is enqueued and the slot
//     completed, and a completed slot is never resumed;
//   - a replica deposed while it ran (paused past its lease, partitioned)
//     cannot commit: Run.Complete fences its transaction and refuses a
//     lease taken over since (cronfence.ErrLeaseLost), and the whole
//     transaction, insert included, rolls back;
//   - a commit whose answer was lost (the connection broke at COMMIT) is
//     settled by the scheduler, which reads whether the slot was completed
//     (Job.CompletesInTx) and resumes it only when it was not.
//
// # The unique key, a second guard
//
// The job is inserted with River's UniqueOpts ByArgs, across every job
// state, and Slot.Key is the only field of Slot tagged river:"unique"; so
// River's unique key is the job's kind and "JOB/SLOT"
// (cronfence.Run.IdempotencyKey), the same for every attempt of a slot
// whatever its generation or attempt. River enforces it with a unique
// index: when two attempts of one slot both reach InsertTx, the second
// waits for the first's transaction and, once it commits, is skipped as a
// duplicate (the slot is then completed all the same). The slot's time
// rather than ByPeriod: a period is measured from the insert's time, which
// two attempts of one slot may see on either side of a period's boundary.
// The key lasts as long as River keeps the job's row (its job cleaner
// removes completed jobs after a day by default); the slot's completion
// lasts as long as cronfence keeps its claims (Config.Retention), and is
// what guarantees the once.
//
// # Requirements
//
//   - River's tables and cronfence's store in one PostgreSQL database
//     (schemas may differ), Config.Pool a pool on it;
//   - the job args embed Slot, filled from the Slot ArgsFunc is given; no
//     other field tagged river:"unique" whose value differs between
//     attempts of a slot;
//   - River's workers should be idempotent all the same: River itself runs
//     a job at least once (a worker killed mid-job runs it again).
package riverbridge
