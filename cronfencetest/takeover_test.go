package cronfencetest_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/cronfencetest"
	"github.com/cronfence/cronfence/store"
)

func TestTakeOver(t *testing.T) {
	t.Parallel()

	t.Run("TheFenceRefusesTheWriteAndTheSlotResumesAfter", func(t *testing.T) {
		t.Parallel()
		forEachStore(t, func(t *testing.T, setup func(*testing.T) testBundle) {
			b := setup(t)
			var taker store.Lease
			res := cronfencetest.Run(ctx(t), t, b.store, closeJob(func(ctx context.Context, run *cronfence.Run) error {
				taker = cronfencetest.TakeOver(ctx) // the process paused here, past its lease
				return b.write(ctx, run, run.IdempotencyKey(), false)
			}), &cronfencetest.RunOpts{Slot: slot})

			if !errors.Is(res.HandlerErr, cronfence.ErrLeaseLost) || !errors.Is(res.Err, cronfence.ErrLeaseLost) {
				t.Fatalf("Err = %v, HandlerErr = %v; want both to wrap ErrLeaseLost", res.Err, res.HandlerErr)
			}
			if taker != res.TakenOver || taker.Generation != res.Run.Generation+1 || taker.Owner != cronfencetest.TakeoverOwner || taker.Name != res.Run.Lease {
				t.Fatalf("TakeOver returned %+v, TakenOver = %+v; want the lease %s at generation %d by %s",
					taker, res.TakenOver, res.Run.Lease, res.Run.Generation+1, cronfencetest.TakeoverOwner)
			}
			if s := res.Slot; s.Status != store.SlotRunning || s.Generation != taker.Generation || s.Owner != cronfencetest.TakeoverOwner || s.Attempts != 2 {
				t.Fatalf("Slot = %+v; want it running, attempt 2, under the taker's generation %d", s, taker.Generation)
			}
			if res.Row.Success || res.Row.Generation != res.Run.Generation {
				t.Fatalf("Row = %+v; want the run's row, not a success", res.Row)
			}
			if got := b.effects(t); len(got) != 0 {
				t.Fatalf("effects = %q; want none: the fenced transaction rolled back", got)
			}
			res.RequireLeaseLost(t)

			// The taker let its lease go when Run returned: the slot is
			// resumed as the attempt after the taker's.
			again := cronfencetest.Run(ctx(t), t, b.store, closeJob(func(ctx context.Context, run *cronfence.Run) error {
				return b.write(ctx, run, run.IdempotencyKey(), true)
			}), &cronfencetest.RunOpts{Slot: slot})
			again.RequireCompleted(t)
			if again.Run.Attempt != 3 || again.Run.Generation != taker.Generation+1 {
				t.Fatalf("the resume ran attempt %d at generation %d; want attempt 3 at generation %d", again.Run.Attempt, again.Run.Generation, taker.Generation+1)
			}
			if got, want := b.effects(t), []string{again.Run.IdempotencyKey()}; !slices.Equal(got, want) {
				t.Fatalf("effects = %q; want %q", got, want)
			}
		})
	})

	t.Run("InsideTheTransactionBeforeItCompletes", func(t *testing.T) {
		t.Parallel()
		forEachStore(t, func(t *testing.T, setup func(*testing.T) testBundle) {
			b := setup(t)
			if b.kind == "sqlite" {
				t.Skip("a SQLite write transaction holds the file's write lock from its start: no takeover can come inside it")
			}
			res := cronfencetest.Run(ctx(t), t, b.store, closeJob(func(ctx context.Context, run *cronfence.Run) error {
				return b.inTx(ctx, func(tx *sql.Tx) error {
					if err := b.insert(ctx, tx, run.IdempotencyKey()); err != nil {
						return err
					}
					cronfencetest.TakeOver(ctx) // written, not yet fenced
					return run.Complete(ctx, tx)
				})
			}), &cronfencetest.RunOpts{Slot: slot})
			res.RequireLeaseLost(t)
			if got := b.effects(t); len(got) != 0 {
				t.Fatalf("effects = %q; want none", got)
			}
		})
	})

	t.Run("CalledTwiceReturnsTheSameLease", func(t *testing.T) {
		t.Parallel()
		forEachStore(t, func(t *testing.T, setup func(*testing.T) testBundle) {
			b := setup(t)
			var first, second store.Lease
			res := cronfencetest.Run(ctx(t), t, b.store, closeJob(func(ctx context.Context, run *cronfence.Run) error {
				first = cronfencetest.TakeOver(ctx)
				second = cronfencetest.TakeOver(ctx)
				return b.write(ctx, run, run.IdempotencyKey(), true)
			}), &cronfencetest.RunOpts{Slot: slot})
			res.RequireLeaseLost(t)
			if first.Generation == 0 || first != second || res.Slot.Attempts != 2 {
				t.Fatalf("TakeOver returned %+v, then %+v, and the slot is %+v; want one takeover, attempt 2", first, second, res.Slot)
			}
		})
	})

	t.Run("ReportsWhatCannotBeTakenOver", func(t *testing.T) {
		t.Parallel()
		forEachStore(t, func(t *testing.T, setup func(*testing.T) testBundle) {
			b := setup(t)
			cases := []struct {
				name    string
				handler func(ctx context.Context, run *cronfence.Run) (store.Lease, error)
				want    string
			}{
				{"completed", func(ctx context.Context, run *cronfence.Run) (store.Lease, error) {
					if err := b.write(ctx, run, run.IdempotencyKey(), true); err != nil {
						return store.Lease{}, err
					}
					return cronfencetest.TakeOver(ctx), nil
				}, "completed already"},
			}
			if b.kind != "sqlite" {
				cases = append(cases, struct {
					name    string
					handler func(ctx context.Context, run *cronfence.Run) (store.Lease, error)
					want    string
				}{"fenced", func(ctx context.Context, run *cronfence.Run) (taker store.Lease, err error) {
					err = b.inTx(ctx, func(tx *sql.Tx) error {
						if err := run.Fence(ctx, tx); err != nil {
							return err
						}
						taker = cronfencetest.TakeOver(ctx) // the fence holds it off
						return nil
					})
					return taker, err
				}, "still open"})
			}
			for i, tc := range cases {
				var taker store.Lease
				var handlerErr error
				msg := failures(t, func(tb testing.TB) {
					job := closeJob(func(ctx context.Context, run *cronfence.Run) error {
						taker, handlerErr = tc.handler(ctx, run)
						return handlerErr
					})
					cronfencetest.Run(ctx(t), tb, b.store, job, &cronfencetest.RunOpts{Slot: slot.AddDate(0, 0, i)}).RequireCompleted(tb)
				})
				if len(msg) != 1 || !strings.Contains(msg[0], tc.want) || taker.Generation != 0 || handlerErr != nil {
					t.Errorf("%s: TakeOver returned %+v and reported %q, the handler %v; want a zero lease, one failure saying %q and the run completed",
						tc.name, taker, msg, handlerErr, tc.want)
				}
			}
		})
	})

	t.Run("AfterTheRunEndedIsReported", func(t *testing.T) {
		t.Parallel()
		forEachStore(t, func(t *testing.T, setup func(*testing.T) testBundle) {
			b := setup(t)
			var taker store.Lease
			msg := failures(t, func(tb testing.TB) {
				var handlerCtx context.Context
				cronfencetest.Run(ctx(t), tb, b.store, closeJob(func(ctx context.Context, _ *cronfence.Run) error {
					handlerCtx = ctx // kept by a goroutine the handler left behind
					return nil
				}), &cronfencetest.RunOpts{Slot: slot}).RequireCompleted(tb)
				taker = cronfencetest.TakeOver(handlerCtx)
			})
			if len(msg) != 1 || !strings.Contains(msg[0], "after its run ended") || taker.Generation != 0 {
				t.Fatalf("TakeOver after the run returned %+v and reported %q; want a zero lease and one failure saying so", taker, msg)
			}
		})
	})

	t.Run("OutsideARunPanics", func(t *testing.T) {
		t.Parallel()
		defer func() {
			if p := recover(); p == nil || !strings.Contains(p.(string), "cronfencetest.Run") {
				t.Fatalf("TakeOver outside a run panicked with %v; want a panic naming cronfencetest.Run", p)
			}
		}()
		cronfencetest.TakeOver(context.Background())
	})
}
