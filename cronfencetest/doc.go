// Package cronfencetest lets a service test its cronfence handlers without
// a scheduler: a handler that fences its writes (run.Fence) or completes
// its slot in its own transaction (run.Complete) runs once, for a slot the
// test picks, against a real store, under a real lease.
//
// Run claims the slot and takes the job's lease as a scheduled run does
// (through cronfence.LockSlot), runs the handler, records its end and
// returns a Result read back from the store: the handler's error, the run
// it got (generation, attempt, idempotency key), the slot's row afterwards,
// the run row, and whether the handler's transaction completed the slot.
// RunHandler does the same for a handler alone.
//
// TakeOver provokes the case fencing exists for. Called from inside the
// handler, or from a fake the handler calls with its context, it makes
// another holder take the slot over at that point, as a replica does when
// the run's process paused past its lease: from then on run.Fence and
// run.Complete return cronfence.ErrLeaseLost, and the handler's
// transaction must roll back. RequireCompleted and RequireLeaseLost check
// the two outcomes a handler test cares about most, saying what happened
// instead, with the lines the handler logged.
//
// A test of a handler that closes the day:
//
//	func TestDailyClose(t *testing.T) {
//		ctx := context.Background()
//		st := newStore(t) // migrated, the test's own: a SQLite file in t.TempDir(), a schema, a database
//		job := cronfence.Job{Name: "daily-close", Schedule: "5 0 * * *", CompletesInTx: true}
//		slot := time.Date(2026, 9, 25, 0, 5, 0, 0, time.UTC)
//
//		job.Handler = dailyClose(st.DB(), func(context.Context) (float64, error) { return 42, nil })
//		cronfencetest.Run(ctx, t, st, job, &cronfencetest.RunOpts{Slot: slot}).RequireCompleted(t)
//
//		job.Handler = dailyClose(st.DB(), func(ctx context.Context) (float64, error) {
//			cronfencetest.TakeOver(ctx) // the process pauses here, and loses its lease
//			return 42, nil
//		})
//		res := cronfencetest.Run(ctx, t, st, job, &cronfencetest.RunOpts{Slot: slot.AddDate(0, 0, 1)})
//		res.RequireLeaseLost(t)
//		// ... and no row under res.Run.IdempotencyKey("store-42") in the service's table.
//	}
//
// Every run is real: it writes the slot's claim, the lease and the run row
// into the store, and a slot that completed is not run again. Give each
// test a store of its own (a SQLite file in t.TempDir(), a PostgreSQL
// schema, a MySQL database), as cronfence's own tests do.
//
// A run's end is recorded as LockSlot records it, which differs from a
// scheduler's in what comes after the handler: a failed slot is retried
// only when the test runs it again (as its next attempt, while the job's
// MaxAttempts allow), and a run that lost its lease with nobody taking the
// slot over (its TTL passed) ends failed where a scheduler leaves it
// running for another replica to resume.
package cronfencetest
