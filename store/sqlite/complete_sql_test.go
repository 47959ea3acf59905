package sqlite

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// A client that is not this Go package (the sqlite3 shell of a job serve
// started) fences and completes with statements on the views
// cronfence_fence and cronfence_complete, inside BEGIN IMMEDIATE: the
// effect and the slot's completion commit together, and a deposed
// generation's statement aborts, naming CF001, so nothing of it commits.
func TestCompleteAndFenceAsStatements(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, newFile(t), nil)
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().Exec(`CREATE TABLE effects (slot TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	slot := now.Add(-time.Second).Truncate(time.Second)
	claimed, err := s.SlotClaim(ctx, store.SlotClaimParams{Job: "close", Slot: slot, LeaseName: "job:close", Owner: "a", TTL: time.Minute, MaxAttempts: 3})
	if err != nil || !claimed.Claimed {
		t.Fatalf("claim = %+v, %v", claimed, err)
	}
	write := func(view string, l store.Lease) error {
		tx, err := s.DB().BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := tx.Exec(`INSERT INTO `+view+` VALUES (?, ?)`, l.Name, l.Generation); err != nil {
			return err
		}
		if _, err := tx.Exec(`INSERT INTO effects VALUES (?)`, view); err != nil {
			return err
		}
		return tx.Commit()
	}
	effects := func() int {
		var n int
		if err := s.DB().QueryRow(`SELECT count(*) FROM effects`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	if err := write("cronfence_fence", claimed.Lease); err != nil {
		t.Fatalf("fence by the holder: %v", err)
	}
	if got, _ := s.SlotGet(ctx, "close", slot); got.Status != store.SlotRunning {
		t.Fatalf("a fence alone changed the slot: %+v", got)
	}
	if err := write("cronfence_complete", claimed.Lease); err != nil {
		t.Fatalf("completion by the holder: %v", err)
	}
	if got, _ := s.SlotGet(ctx, "close", slot); got.Status != store.SlotCompleted || got.FinishedAt.IsZero() {
		t.Fatalf("slot after the completion = %+v; want completed", got)
	}
	if n := effects(); n != 2 {
		t.Fatalf("%d effects, want 2", n)
	}

	// Deposed: another owner holds the lease now.
	if _, ok, err := s.LeaseAcquire(ctx, store.LeaseAcquireParams{Name: "job:close", Owner: "b", TTL: time.Hour, Now: now.Add(time.Hour)}); err != nil || !ok {
		t.Fatalf("takeover = %v, %v", ok, err)
	}
	for _, view := range []string{"cronfence_fence", "cronfence_complete"} {
		if err := write(view, claimed.Lease); err == nil || !strings.Contains(err.Error(), "CF001") {
			t.Fatalf("%s by a deposed generation = %v; want an abort naming CF001", view, err)
		}
	}
	if n := effects(); n != 2 {
		t.Fatalf("%d effects after the deposed writes, want still 2", n)
	}
}
