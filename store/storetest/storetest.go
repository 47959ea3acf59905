// Package storetest is the conformance suite every cronfence store must
// pass. A store's own tests call Run once; they add only what is specific to
// that store (its transaction types, its migration runner, its clock).
package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// Bundle is what a store's test hands the suite for one test.
type Bundle struct {
	// Store is a freshly migrated, empty store of this test's own.
	Store store.Store

	// Open returns another Store on the same database over connections of
	// its own, as another replica would have. The suite calls it from the
	// test goroutine; the caller closes what it opens at cleanup.
	Open func(t *testing.T) store.Store

	// FencedWrite opens a transaction of the kind the store's users open,
	// calls Store.LeaseFence(ctx, tx, name, generation) in it and, if that
	// passes, inserts key into a table of the test's own and commits. When
	// the fence refuses it rolls back and returns the fence's error.
	FencedWrite func(ctx context.Context, name string, generation int64, key string) error

	// WriteTx opens a transaction of the kind the store's users open, calls
	// guard(tx) in it (a fence or a completion) and, if that passes,
	// inserts key into FencedWrite's table; it commits when commit is true
	// and rolls back otherwise, as a handler whose later statement failed
	// would. When guard fails it rolls back and returns guard's error.
	WriteTx func(ctx context.Context, key string, commit bool, guard func(tx any) error) error

	// Written reports whether FencedWrite or WriteTx committed key.
	Written func(ctx context.Context, key string) bool

	// Dump returns every row of every table of the store, as text in a
	// stable order, so a refused call can be shown to have written nothing.
	Dump func(t *testing.T) string

	// RenameTable renames one of the store's tables, named without the
	// store's prefix or schema ("job_state"), aside, as an operator's
	// mistake would, or, with back, to its name again. For the tests of a
	// damaged schema.
	RenameTable func(t *testing.T, table string, back bool)
}

// Run exercises a store. newBundle is called once per test, from tests that
// run in parallel, and must return a bundle of its own.
func Run(t *testing.T, newBundle func(t *testing.T) Bundle) {
	t.Helper()
	for _, group := range []struct {
		name  string
		tests []namedTest
	}{
		{"Lease", leaseTests},
		{"Fence", fenceTests},
		{"Complete", completeTests},
		{"Register", registerTests},
		{"PauseTable", pauseTableTests},
		{"Slot", slotTests},
		{"JobState", jobStateTests},
		{"Batch", batchTests},
		{"FinishBatch", finishBatchTests},
		{"Run", runTests},
		{"Interrupted", interruptedTests},
		{"RunListPerJob", runListPerJobTests},
		{"Prune", pruneTests},
		{"Input", inputTests},
		{"Race", raceTests},
		{"Monitor", monitorTests},
		{"Settle", settleTests},
		{"Skip", skipTests},
		{"FinishRunning", finishRunningTests},
		{"Hostile", hostileTests},
		{"Schedule", scheduleTests},
		{"Backfill", backfillTests},
	} {
		t.Run(group.name, func(t *testing.T) {
			for _, tt := range group.tests {
				t.Run(tt.name, func(t *testing.T) {
					if !tt.serial {
						t.Parallel()
					}
					tt.fn(t, newBundle(t))
				})
			}
		})
	}
}

type namedTest struct {
	name string
	fn   func(t *testing.T, b Bundle)
	// serial tests open many connections at once and run alone.
	serial bool
}

// ctx returns a context bounded well below the test binary's timeout, so a
// store that hangs fails one test with a clear message.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

// dbNow reads the store's clock, the base of every pinned time in the suite,
// so pinned instants stay near the real one that fences compare against.
func dbNow(t *testing.T, s store.Store) time.Time {
	t.Helper()
	now, err := s.Now(ctx(t))
	if err != nil {
		t.Fatalf("Now: %v", err)
	}
	if now.IsZero() || now.Location() != time.UTC {
		t.Fatalf("Now = %v, want a non-zero UTC time", now)
	}
	return now.Truncate(time.Microsecond)
}

// waitOut waits, on this process's monotonic clock from now, the longest
// Wait of a claim's answer, as a caller does before starting the runs it
// won (store.SlotClaimResult.Wait). A Wait outside [0, MaxClaimWait], or
// one given with a refusal, fails the test.
func waitOut(t *testing.T, res []store.SlotClaimResult) {
	t.Helper()
	var longest time.Duration
	for i, r := range res {
		switch {
		case r.Wait < 0 || r.Wait > store.MaxClaimWait:
			t.Fatalf("item %d: Wait %s, want between 0 and MaxClaimWait (%s)", i, r.Wait, store.MaxClaimWait)
		case !r.Claimed && r.Wait != 0:
			t.Fatalf("item %d: refused %q with a Wait of %s, want zero", i, r.Refusal, r.Wait)
		}
		longest = max(longest, r.Wait)
	}
	if longest > 0 {
		<-time.After(longest)
	}
}

func mustAcquire(t *testing.T, s store.Store, p store.LeaseAcquireParams) store.Lease {
	t.Helper()
	l, ok, err := s.LeaseAcquire(ctx(t), p)
	if err != nil {
		t.Fatalf("LeaseAcquire(%q by %q): %v", p.Name, p.Owner, err)
	}
	if !ok {
		t.Fatalf("LeaseAcquire(%q by %q) was refused; holder %+v", p.Name, p.Owner, l)
	}
	return l
}

func mustClaim(t *testing.T, s store.Store, p store.SlotClaimParams) store.SlotClaimResult {
	t.Helper()
	r, err := s.SlotClaim(ctx(t), p)
	if err != nil {
		t.Fatalf("SlotClaim(%q, %s by %q): %v", p.Job, p.Slot, p.Owner, err)
	}
	if !r.Claimed {
		t.Fatalf("SlotClaim(%q, %s by %q) refused: %s (slot %+v, lease %+v)", p.Job, p.Slot, p.Owner, r.Refusal, r.Slot, r.Lease)
	}
	return r
}

func wantErrIs(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: error = %v, want one wrapping %v", what, err, target)
	}
}

func wantNotFoundLease(t *testing.T, s store.Store, name string) {
	t.Helper()
	if l, err := s.LeaseGet(ctx(t), name); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("LeaseGet(%q) = %+v, %v; want ErrNotFound (nothing written)", name, l, err)
	}
}
