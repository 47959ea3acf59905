package cronfencetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/store"
)

// RequireCompleted fails the test (tb.Fatalf) unless the run succeeded and
// its slot ended completed by it: no error, and the slot completed under
// the run's generation, so it never runs again. The message says what
// happened instead, with the lines the handler logged.
func (r *Result) RequireCompleted(tb testing.TB) {
	tb.Helper()
	if r.Err == nil && r.completedByRun() {
		return
	}
	tb.Fatalf("cronfencetest: want the run completed, got %s", r)
}

// RequireLeaseLost fails the test (tb.Fatalf) unless the run lost its lease
// and its handler noticed: the handler returned an error wrapping
// cronfence.ErrLeaseLost (its Fence or Complete refused it), and the slot
// was not completed by the run. A handler that returned nil did not fence
// the transaction that wrote its effect, or swallowed the refusal; its
// effect may have committed beside the new holder's. The test checks its
// own tables for that effect.
func (r *Result) RequireLeaseLost(tb testing.TB) {
	tb.Helper()
	var why string
	switch {
	case r.completedByRun():
		why = "the slot completed by the run"
	case r.HandlerErr == nil:
		why = "a handler that returned nil (is its transaction fenced with run.Fence or run.Complete?)"
	case !errors.Is(r.HandlerErr, cronfence.ErrLeaseLost):
		why = "a handler error that does not wrap cronfence.ErrLeaseLost"
	default:
		return
	}
	tb.Fatalf("cronfencetest: want the handler refused for its lost lease, got %s: %s", why, r)
}

// completedByRun reports whether the slot ended completed under the run's
// generation.
func (r *Result) completedByRun() bool {
	return r.Slot.Status == store.SlotCompleted && r.Slot.Generation == r.Run.Generation
}

// String describes the result for a test's message: the run, its error,
// the slot as it ended and the lines the handler logged.
func (r *Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "job %q, slot %s, attempt %d at generation %d: ",
		r.Run.Job, r.Run.Slot.Format(time.RFC3339), r.Run.Attempt, r.Run.Generation)
	if r.Err == nil {
		b.WriteString("no error")
	} else {
		fmt.Fprintf(&b, "error %q", r.Err)
	}
	fmt.Fprintf(&b, "; the slot %s at generation %d by %s", r.Slot.Status, r.Slot.Generation, r.Slot.Owner)
	if r.CompletedInTx {
		b.WriteString(", completed in the handler's transaction")
	}
	if len(r.Row.Logs) > 0 {
		b.WriteString("; the handler logged:\n\t")
		b.WriteString(strings.Join(r.Row.Logs, "\n\t"))
	}
	return b.String()
}
