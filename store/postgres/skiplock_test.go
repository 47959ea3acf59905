package postgres_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cronfence/cronfence/internal/wait"
	"github.com/cronfence/cronfence/store"
)

// A replica that fell behind records the slots it passed over while the
// others claim those same slots. A claim writes its slot rows in no set
// order, so a skip that has written slot a and waits for the claim's
// uncommitted slot b, while the claim goes on to write a, must not hold
// the claim: PostgreSQL broke that deadlock only after deadlock_timeout
// (1 s), aborting one of them, every claim concerned waiting meanwhile.
// The skip gives way and is sent again, and writes nothing where the
// claim's rows stand.
func TestASkipGivesWayToAClaimWritingTheSameSlots(t *testing.T) {
	t.Parallel()
	s, base, schema := tunedStore(t)
	slots := pgx.Identifier{schema, "slots"}.Sanitize()
	slot := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	write := func(tx pgx.Tx, job string) error {
		_, err := tx.Exec(ctx(t), `INSERT INTO `+slots+` (job, slot, status, owner, lease_name, generation, attempts, started_at)
		                           VALUES ($1, $2, 'running', 'claimer', 'job:' || $1, 1, 1, now())`, job, slot)
		return err
	}

	// The claim, mid-statement: b written, a next.
	claim, err := base.Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer claim.Rollback(ctx(t))
	if err := write(claim, "b"); err != nil {
		t.Fatal(err)
	}
	var claimXID int64
	if err := claim.QueryRow(ctx(t), `SELECT txid_current()`).Scan(&claimXID); err != nil {
		t.Fatal(err)
	}

	type answer struct {
		runs []store.Run
		err  error
	}
	skipped := make(chan answer, 1)
	go func() {
		var items []store.SlotSkipParams
		for _, job := range []string{"a", "b"} {
			items = append(items, store.SlotSkipParams{Job: job, Slot: slot, LeaseName: "job:" + job, Owner: "behind",
				After: slot.Add(time.Second), Reason: store.SkipPassedOver, Log: "passed over"})
		}
		runs, err := s.SlotSkip(ctx(t), items)
		skipped <- answer{runs, err}
	}()
	// The skip has written a and waits for the claim's b.
	wait.For(t, 10*time.Second, func() bool {
		var waiting bool
		err := base.QueryRow(ctx(t), `SELECT EXISTS (SELECT 1 FROM pg_locks
		                                             WHERE locktype = 'transactionid' AND NOT granted
		                                               AND transactionid::text::bigint = $1)`, claimXID).Scan(&waiting)
		return err == nil && waiting
	}, func() string { return "the skip never waited for the claim's slot row" })

	if err := write(claim, "a"); err != nil {
		t.Fatalf("the claim's write of a slot the skip was writing: %v", err)
	}
	if err := claim.Commit(ctx(t)); err != nil {
		t.Fatalf("the claim's commit: %v", err)
	}
	got := <-skipped
	if got.err != nil || len(got.runs) != 0 {
		t.Fatalf("skip = %d run row(s), %v; want none written (the claim's rows stand) and no error", len(got.runs), got.err)
	}
	for _, job := range []string{"a", "b"} {
		sl, err := s.SlotGet(ctx(t), job, slot)
		if err != nil || sl.Status != store.SlotRunning || sl.Owner != "claimer" {
			t.Errorf("slot %s = %+v, %v; want the claim's, running", job, sl, err)
		}
	}
}
