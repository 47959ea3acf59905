package sqlite

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// everyCall calls each method of s once with valid arguments and returns
// the errors by method name. Close is left out.
func everyCall(ctx context.Context, s *Store) map[string]error {
	slot := time.Date(2026, 9, 25, 0, 5, 0, 0, time.UTC)
	ref := store.LeaseRef{Name: "n", Owner: "o", Generation: 1}
	errs := map[string]error{}
	errs["Migrate"] = s.Migrate(ctx)
	_, _, errs["SchemaVersion"] = s.SchemaVersion(ctx)
	_, errs["Now"] = s.Now(ctx)
	_, _, errs["LeaseAcquire"] = s.LeaseAcquire(ctx, store.LeaseAcquireParams{Name: "n", Owner: "o", TTL: time.Minute})
	_, errs["LeaseRenew"] = s.LeaseRenew(ctx, store.LeaseRenewParams{LeaseRef: ref, TTL: time.Minute})
	_, errs["LeaseRelease"] = s.LeaseRelease(ctx, ref)
	_, errs["LeaseGet"] = s.LeaseGet(ctx, "n")
	errs["LeaseFence"] = s.LeaseFence(ctx, "not even a transaction", "n", 1)
	claim := store.SlotClaimParams{Job: "j", Slot: slot, LeaseName: "n", Owner: "o", TTL: time.Minute, MaxAttempts: 1}
	_, errs["SlotClaim"] = s.SlotClaim(ctx, claim)
	_, errs["SlotClaimBatch"] = s.SlotClaimBatch(ctx, []store.SlotClaimParams{claim})
	_, errs["LeaseRenewBatch"] = s.LeaseRenewBatch(ctx, []store.LeaseRenewParams{{LeaseRef: ref, TTL: time.Minute}})
	_, errs["JobStateSet"] = s.JobStateSet(ctx, store.JobStateSetParams{Job: "j", By: "o"})
	_, errs["JobStateList"] = s.JobStateList(ctx)
	_, errs["SlotFinish"] = s.SlotFinish(ctx, store.SlotFinishParams{Job: "j", Slot: slot, LeaseName: "n", Owner: "o", Generation: 1, Status: store.SlotCompleted})
	_, errs["SlotGet"] = s.SlotGet(ctx, "j", slot)
	_, errs["RunInsert"] = s.RunInsert(ctx, store.Run{Job: "j"})
	_, errs["RunList"] = s.RunList(ctx, store.RunListParams{})
	_, errs["Prune"] = s.Prune(ctx, store.PruneParams{Before: slot})
	return errs
}

// TestClosed: after Close, which is idempotent, every call fails with
// ErrClosed before it does anything else.
func TestClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := migrated(t)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for name, err := range everyCall(ctx, s) {
		if !errors.Is(err, store.ErrClosed) || !strings.HasPrefix(err.Error(), "sqlite: ") {
			t.Errorf("%s after Close = %v, want a sqlite: error wrapping ErrClosed", name, err)
		}
	}
}

// TestPoolClosedUnderneath: a caller that closes DB() itself gets ErrClosed
// from the store, not database/sql's unexported error.
func TestPoolClosedUnderneath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := migrated(t)
	if err := s.DB().Close(); err != nil {
		t.Fatal(err)
	}
	for name, err := range everyCall(ctx, s) {
		switch name {
		case "Now", "LeaseFence": // no database access
			continue
		}
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s on a closed pool = %v, want ErrClosed", name, err)
		}
	}
}

// TestValidationComesFirst: validation runs before the database is
// touched, so a bad call on a never-migrated file is refused as invalid, not
// as an outdated schema.
func TestValidationComesFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, newFile(t), nil)
	_, _, err := s.LeaseAcquire(ctx, store.LeaseAcquireParams{Name: "", Owner: "o", TTL: time.Minute})
	if !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("LeaseAcquire with no name = %v, want ErrInvalidArgument", err)
	}
	_, err = s.RunInsert(ctx, store.Run{Job: "j", Attempt: -1})
	if !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("RunInsert with a negative attempt = %v, want ErrInvalidArgument", err)
	}
	if err := s.LeaseFence(ctx, nil, "n", 0); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("LeaseFence at generation 0 = %v, want ErrInvalidArgument", err)
	}
}
