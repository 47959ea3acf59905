package cronfencetest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/cronfencetest"
)

func TestRequire(t *testing.T) {
	t.Parallel()

	// Each case runs a handler on a slot of its own and checks what each
	// assertion reports of its result: nothing, or one failure saying why.
	t.Run("ReportsWhatTheRunDid", func(t *testing.T) {
		t.Parallel()
		forEachStore(t, func(t *testing.T, setup func(*testing.T) testBundle) {
			b := setup(t)
			for i, tc := range []struct {
				name      string
				handler   cronfence.Handler
				completed string // what RequireCompleted reports; "" for nothing
				leaseLost string // what RequireLeaseLost reports
			}{
				{
					name: "completed",
					handler: func(ctx context.Context, run *cronfence.Run) error {
						return b.write(ctx, run, run.IdempotencyKey(), true)
					},
					leaseLost: "got the slot completed by the run",
				},
				{
					name: "failed",
					handler: func(context.Context, *cronfence.Run) error {
						return errors.New("no report")
					},
					completed: `error "no report"; the slot failed`,
					leaseLost: "does not wrap cronfence.ErrLeaseLost",
				},
				{
					name: "refused",
					handler: func(ctx context.Context, run *cronfence.Run) error {
						cronfencetest.TakeOver(ctx)
						return b.write(ctx, run, run.IdempotencyKey(), true)
					},
					completed: "the slot running at generation",
				},
				{
					name: "unfenced",
					handler: func(ctx context.Context, run *cronfence.Run) error {
						cronfencetest.TakeOver(ctx)
						return nil // wrote nothing, or wrote without a fence
					},
					completed: "the slot running",
					leaseLost: "a handler that returned nil",
				},
			} {
				res := cronfencetest.Run(ctx(t), t, b.store, closeJob(tc.handler), &cronfencetest.RunOpts{Slot: slot.AddDate(0, 0, i)})
				for _, check := range []struct {
					name string
					fn   func(testing.TB)
					want string
				}{
					{"RequireCompleted", res.RequireCompleted, tc.completed},
					{"RequireLeaseLost", res.RequireLeaseLost, tc.leaseLost},
				} {
					msg := failures(t, check.fn)
					switch {
					case check.want == "" && len(msg) != 0:
						t.Errorf("%s: %s reported %q; want nothing", tc.name, check.name, msg)
					case check.want != "" && (len(msg) != 1 || !strings.Contains(msg[0], check.want)):
						t.Errorf("%s: %s reported %q; want one failure saying %q", tc.name, check.name, msg, check.want)
					}
				}
			}
		})
	})

	t.Run("TheMessageHasTheHandlersLog", func(t *testing.T) {
		t.Parallel()
		forEachStore(t, func(t *testing.T, setup func(*testing.T) testBundle) {
			b := setup(t)
			res := cronfencetest.Run(ctx(t), t, b.store, closeJob(func(_ context.Context, run *cronfence.Run) error {
				run.Logger.Warn("report server unreachable", "host", "10.0.0.7")
				return errors.New("no report")
			}), &cronfencetest.RunOpts{Slot: slot})
			msg := failures(t, res.RequireCompleted)
			if len(msg) != 1 || !strings.Contains(msg[0], "the handler logged:\n\tWARN report server unreachable host=10.0.0.7") {
				t.Fatalf("RequireCompleted reported %q; want the handler's log line in it", msg)
			}
		})
	})
}
