package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cronfence/cronfence/store"
)

// Two services may keep their cronfence schemas in one database. A pause
// takes its job's pause lock until it commits, and a claim that sleeps for
// its slot takes its jobs' pause locks shared (migration 007): those are
// advisory locks, which PostgreSQL keys per database, not per schema. A
// pause in flight in one schema must not hold up the claims of a job of
// the same name in another.
func TestAPauseInOneSchemaDoesNotHoldUpAClaimInAnother(t *testing.T) {
	t.Parallel()
	pausing, pausingSchema := newStore(t)
	claiming, claimingSchema := newStore(t)

	// Pauses in the first schema, between taking their locks and their
	// commit (JobStateSet takes the lock as its first step), of jobs that
	// cover every one of the 16 pause-lock buckets.
	tx, err := pausing.Pool().Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx(t), `SELECT `+pgx.Identifier{pausingSchema, "lock_job_state"}.Sanitize()+`('job-' || g)
		  FROM generate_series(1, 64) g`); err != nil {
		t.Fatal(err)
	}
	var buckets int
	if err := tx.QueryRow(ctx(t), `SELECT count(*) FROM pg_locks
		 WHERE locktype = 'advisory' AND objsubid = 2 AND pid = pg_backend_pid() AND granted`).Scan(&buckets); err != nil {
		t.Fatal(err)
	}
	if buckets != 16 {
		t.Fatalf("the pauses cover %d buckets, want all 16", buckets)
	}

	// Claims in the second schema, each sent ahead of its slot and
	// sleeping for it: those read their pause overrides under the pause
	// locks. A claim that went out after its slot (a slow start) reads
	// them without the locks and proves nothing, so until one slept.
	warm := store.SlotClaimParams{Job: "warm", Slot: time.Now().Add(-time.Hour), LeaseName: "job:warm", Owner: "a",
		TTL: time.Minute, MaxAttempts: 1}
	if got := claimBatch(t, claiming, warm); got.err != nil {
		t.Fatal(got.err)
	}
	for attempt := 1; ; attempt++ {
		now, err := claiming.Now(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		job := fmt.Sprintf("report-%d", attempt)
		p := store.SlotClaimParams{Job: job, Slot: now.Add(store.MaxClaimWait * 9 / 10), LeaseName: "job:" + job, Owner: "a",
			TTL: time.Minute, MaxAttempts: 1, WaitDue: true}
		got := awaitWithoutLockWait(t, claiming.Pool(), claimingSchema, func() claimed { return claimBatch(t, claiming, p) })
		if got.err != nil {
			t.Fatal(got.err)
		}
		if len(got.rs) != 1 || !got.rs[0].Claimed {
			t.Fatalf("the claim answered %+v, want the slot claimed", got.rs)
		}
		if got.rs[0].Slot.StartedAt.Equal(p.Slot) {
			return // it slept for its slot, and no pause of the other schema held it up
		}
		if attempt == 20 {
			t.Fatalf("none of %d claims went out before its slot", attempt)
		}
	}
}
