package cronfencetest_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/cronfencetest"
	"github.com/cronfence/cronfence/store"
)

// slot is 00:05 in São Paulo on 2026-09-25, a slot of dailyClose.
var slot = time.Date(2026, 9, 25, 3, 5, 0, 0, time.UTC)

// closeJob is the daily-close job at 00:05 São Paulo time running h.
func closeJob(h cronfence.Handler) cronfence.Job {
	return cronfence.Job{Name: "daily-close", Schedule: "5 0 * * *", TimeZone: "America/Sao_Paulo", Handler: h}
}

func TestRun(t *testing.T) {
	t.Parallel()

	t.Run("CompletesInTheHandlersTransaction", func(t *testing.T) {
		t.Parallel()
		forEachStore(t, func(t *testing.T, setup func(*testing.T) testBundle) {
			b := setup(t)
			job := closeJob(func(ctx context.Context, run *cronfence.Run) error {
				run.Logger.Info("closing the day")
				return b.write(ctx, run, run.IdempotencyKey("store-42"), true)
			})
			job.CompletesInTx = true
			// A time after the slot picks the slot: the schedule's latest
			// instant at or before it.
			res := cronfencetest.Run(ctx(t), t, b.store, job, &cronfencetest.RunOpts{Slot: slot.Add(7 * time.Minute)})

			if res.Err != nil || res.HandlerErr != nil {
				t.Fatalf("Err = %v, HandlerErr = %v; want none", res.Err, res.HandlerErr)
			}
			if !res.Run.Slot.Equal(slot) || res.Run.Job != "daily-close" || res.Run.Lease != "job:daily-close" || res.Run.Attempt != 1 || res.Run.Generation < 1 {
				t.Fatalf("the handler got %+v; want slot %s of daily-close, attempt 1 under job:daily-close", *res.Run, slot)
			}
			want := store.Slot{Job: "daily-close", Slot: slot, Status: store.SlotCompleted, Owner: res.Run.Owner, LeaseName: "job:daily-close", Generation: res.Run.Generation, Attempts: 1}
			if got := res.Slot; got.Job != want.Job || !got.Slot.Equal(want.Slot) || got.Status != want.Status || got.Owner != want.Owner ||
				got.LeaseName != want.LeaseName || got.Generation != want.Generation || got.Attempts != want.Attempts {
				t.Fatalf("Slot = %+v; want %+v", got, want)
			}
			if !res.CompletedInTx {
				t.Fatal("CompletedInTx = false; the handler's transaction completed the slot")
			}
			if !res.Row.Success || res.Row.Generation != res.Run.Generation || res.Row.Attempt != 1 || !slices.ContainsFunc(res.Row.Logs, func(l string) bool { return strings.Contains(l, "closing the day") }) {
				t.Fatalf("Row = %+v; want the run's successful row with its log line", res.Row)
			}
			if got, want := b.effects(t), []string{"daily-close/2026-09-25T03:05:00Z/store-42"}; !slices.Equal(got, want) {
				t.Fatalf("effects = %q; want %q", got, want)
			}
			res.RequireCompleted(t)
		})
	})

	t.Run("RunsAFailedSlotAgainAsItsNextAttemptWithTheSameKey", func(t *testing.T) {
		t.Parallel()
		forEachStore(t, func(t *testing.T, setup func(*testing.T) testBundle) {
			b := setup(t)
			unreachable := errors.New("report server unreachable")
			first := cronfencetest.Run(ctx(t), t, b.store, closeJob(func(context.Context, *cronfence.Run) error {
				return unreachable
			}), &cronfencetest.RunOpts{Slot: slot})
			if !errors.Is(first.Err, unreachable) || !errors.Is(first.HandlerErr, unreachable) {
				t.Fatalf("Err = %v, HandlerErr = %v; want the handler's", first.Err, first.HandlerErr)
			}
			if first.Slot.Status != store.SlotFailed || first.Row.Success || first.Row.Error != unreachable.Error() || first.CompletedInTx {
				t.Fatalf("after a failed attempt: Slot = %+v, Row = %+v; want the slot failed and an unsuccessful row with the error", first.Slot, first.Row)
			}

			second := cronfencetest.Run(ctx(t), t, b.store, closeJob(func(ctx context.Context, run *cronfence.Run) error {
				return b.write(ctx, run, run.IdempotencyKey(), true)
			}), &cronfencetest.RunOpts{Slot: slot})
			second.RequireCompleted(t)
			if second.Run.Attempt != 2 || second.Run.Generation <= first.Run.Generation {
				t.Fatalf("the retry ran attempt %d at generation %d; want attempt 2 after generation %d", second.Run.Attempt, second.Run.Generation, first.Run.Generation)
			}
			if first.Run.IdempotencyKey() != second.Run.IdempotencyKey() {
				t.Fatalf("the attempts' keys are %q and %q; want one key per slot", first.Run.IdempotencyKey(), second.Run.IdempotencyKey())
			}
		})
	})

	t.Run("CompletesInTxHandlerThatDidNotCompleteFails", func(t *testing.T) {
		t.Parallel()
		forEachStore(t, func(t *testing.T, setup func(*testing.T) testBundle) {
			b := setup(t)
			// The scheduler does not count a CompletesInTx run as completed
			// when its handler returns nil without Run.Complete: neither
			// does Run.
			job := closeJob(func(ctx context.Context, run *cronfence.Run) error {
				return b.write(ctx, run, run.IdempotencyKey(), false)
			})
			job.CompletesInTx = true
			res := cronfencetest.Run(ctx(t), t, b.store, job, &cronfencetest.RunOpts{Slot: slot})
			if res.HandlerErr != nil || res.Err == nil || !strings.Contains(res.Err.Error(), "CompletesInTx") {
				t.Fatalf("Err = %v, HandlerErr = %v; want no handler error and the run failed for not completing", res.Err, res.HandlerErr)
			}
			if res.CompletedInTx || res.Slot.Status != store.SlotFailed {
				t.Fatalf("CompletedInTx = %v, Slot = %+v; want the slot failed, not completed", res.CompletedInTx, res.Slot)
			}
			if msg := failures(t, res.RequireCompleted); len(msg) != 1 || !strings.Contains(msg[0], "failed") {
				t.Fatalf("RequireCompleted reported %q; want one failure naming the failed slot", msg)
			}
		})
	})

	t.Run("TimeoutCancelsTheHandler", func(t *testing.T) {
		t.Parallel()
		forEachStore(t, func(t *testing.T, setup func(*testing.T) testBundle) {
			b := setup(t)
			job := closeJob(func(ctx context.Context, _ *cronfence.Run) error {
				<-ctx.Done()
				return ctx.Err()
			})
			job.Timeout = time.Millisecond
			res := cronfencetest.Run(ctx(t), t, b.store, job, &cronfencetest.RunOpts{Slot: slot})
			var timeout *cronfence.TimeoutError
			if !errors.As(res.Err, &timeout) || timeout.Job != "daily-close" || !errors.Is(res.HandlerErr, context.DeadlineExceeded) {
				t.Fatalf("Err = %v, HandlerErr = %v; want the deadline, with the job's *TimeoutError as its cause", res.Err, res.HandlerErr)
			}
			if res.Slot.Status != store.SlotFailed {
				t.Fatalf("Slot = %+v; want it failed", res.Slot)
			}
		})
	})

	t.Run("APanicFailsTheSlot", func(t *testing.T) {
		t.Parallel()
		forEachStore(t, func(t *testing.T, setup func(*testing.T) testBundle) {
			b := setup(t)
			res := cronfencetest.Run(ctx(t), t, b.store, closeJob(func(context.Context, *cronfence.Run) error {
				panic("nil map")
			}), &cronfencetest.RunOpts{Slot: slot})
			if res.Err == nil || !strings.Contains(res.Err.Error(), "panicked: nil map") || res.HandlerErr != nil {
				t.Fatalf("Err = %v, HandlerErr = %v; want the panic as the run's error, and no handler error", res.Err, res.HandlerErr)
			}
			if res.Slot.Status != store.SlotFailed || res.Run == nil || res.Run.Attempt != 1 {
				t.Fatalf("Slot = %+v, Run = %+v; want the slot failed on attempt 1", res.Slot, res.Run)
			}
		})
	})

	t.Run("RunHandlerRunsTheMinute", func(t *testing.T) {
		t.Parallel()
		forEachStore(t, func(t *testing.T, setup func(*testing.T) testBundle) {
			b := setup(t)
			res := cronfencetest.RunHandler(ctx(t), t, b.store, func(ctx context.Context, run *cronfence.Run) error {
				return b.write(ctx, run, run.IdempotencyKey(), true)
			}, &cronfencetest.RunOpts{Slot: slot.Add(30 * time.Second), Owner: "test-replica"})
			res.RequireCompleted(t)
			if res.Run.Job != cronfencetest.HandlerJob || !res.Run.Slot.Equal(slot) || res.Run.Owner != "test-replica" || res.Slot.Owner != "test-replica" {
				t.Fatalf("the handler got %+v; want job %s, slot %s, owner test-replica", *res.Run, cronfencetest.HandlerJob, slot)
			}
		})
	})

	t.Run("DefaultSlotIsTheLatestByTheStoresClock", func(t *testing.T) {
		t.Parallel()
		forEachStore(t, func(t *testing.T, setup func(*testing.T) testBundle) {
			b := setup(t)
			before, err := b.store.Now(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			res := cronfencetest.RunHandler(ctx(t), t, b.store, func(context.Context, *cronfence.Run) error { return nil }, nil)
			res.RequireCompleted(t)
			// The minute of before, or the next if the clock turned one.
			if minute := before.Truncate(time.Minute); !res.Run.Slot.Equal(minute) && !res.Run.Slot.Equal(minute.Add(time.Minute)) {
				t.Fatalf("ran slot %s; want the minute of %s", res.Run.Slot, before)
			}
		})
	})

	t.Run("FailsTheTestWhenTheHandlerCannotRun", func(t *testing.T) {
		t.Parallel()
		forEachStore(t, func(t *testing.T, setup func(*testing.T) testBundle) {
			b := setup(t)
			ran := false
			job := closeJob(func(context.Context, *cronfence.Run) error {
				ran = true
				return nil
			})
			cronfencetest.Run(ctx(t), t, b.store, job, &cronfencetest.RunOpts{Slot: slot}).RequireCompleted(t)
			ran = false

			for _, tc := range []struct {
				name string
				job  cronfence.Job
				opts *cronfencetest.RunOpts
				want string
			}{
				{"completed", job, &cronfencetest.RunOpts{Slot: slot}, "refused completed"},
				{"future", job, &cronfencetest.RunOpts{Slot: time.Now().AddDate(1, 0, 0)}, "refused not_due"},
				{"bad schedule", cronfence.Job{Name: "bad", Schedule: "61 * * * *", Handler: job.Handler}, nil, "bad"},
				{"no handler", cronfence.Job{Name: "none", Schedule: "@daily"}, nil, "no Handler"},
				{"negative timeout", cronfence.Job{Name: "neg", Schedule: "@daily", Handler: job.Handler, Timeout: -time.Second}, nil, "Timeout must not be negative"},
			} {
				msg := failures(t, func(tb testing.TB) { cronfencetest.Run(ctx(t), tb, b.store, tc.job, tc.opts) })
				if len(msg) != 1 || !strings.Contains(msg[0], tc.want) {
					t.Errorf("%s: Run reported %q; want one failure saying %q", tc.name, msg, tc.want)
				}
			}
			if ran {
				t.Fatal("the handler ran")
			}
		})
	})
}
