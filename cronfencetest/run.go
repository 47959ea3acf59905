package cronfencetest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/store"
)

// HandlerJob and HandlerSchedule are the job RunHandler runs a handler
// as: every minute, so RunOpts.Slot picks the minute.
const (
	HandlerJob      = "cronfencetest"
	HandlerSchedule = "* * * * *"
)

// RunOpts are the options of Run and RunHandler. Every field is optional.
type RunOpts struct {
	// Slot picks the occurrence to run: the schedule's most recent instant
	// at or before Slot, as cronfence.SlotLock.At does. It must be due by
	// the store's clock: a slot in its future fails the test. Defaults to
	// the most recent instant by the store's clock.
	Slot time.Time
	// Owner names the process in the lease, the slot's claim and the run
	// row. Defaults to cronfence.OwnerID().
	Owner string
	// Logger receives the lines the handler logs to run.Logger (which also
	// land in the run row) and cronfence's own warnings. Defaults to a
	// text logger on tb.Output(), so they show with the test's output.
	Logger *slog.Logger
}

// Result is what happened when Run ran a handler.
type Result struct {
	// Err is the error the run ended with, as cronfence.LockSlot returns
	// it: the handler's (a panic as an error; with the job's Timeout as its
	// cause when that passed), joined with one wrapping
	// cronfence.ErrLeaseLost when the slot was taken over before the run's
	// end was recorded, in which case the handler's work must count as not
	// done.
	Err error
	// HandlerErr is the error the handler itself returned, before cronfence
	// added to it: what a test of the handler's own error handling checks
	// (did its Fence or Complete refuse it, and did it say so?). Nil when
	// it returned nil or panicked (Err says so).
	HandlerErr error
	// Run is the run the handler got: its Slot, Generation (the fencing
	// token), Lease, Attempt and Owner, as the handler saw them.
	// Run.IdempotencyKey(parts...) gives the key the handler derived with
	// the same parts.
	Run *cronfence.Run
	// Slot is the slot's row after the run, read from the store: completed
	// or failed by this run (Slot.Generation == Run.Generation), or running
	// under the generation that took it over (TakeOver).
	Slot store.Slot
	// Row is the run row this run's end wrote: its success, error and the
	// lines the handler logged. Zero when none was written (Err then says
	// why the end could not be recorded).
	Row store.Run
	// CompletedInTx reports whether the handler completed its slot in a
	// transaction of its own that committed before it returned
	// (Run.Complete, or SQL's complete()): its effect and the completion
	// committed together.
	CompletedInTx bool
	// TakenOver is the lease of the holder that took the slot over while
	// the handler ran (TakeOver); zero when none did. Its generation is
	// the run's plus one.
	TakenOver store.Lease
}

// Run runs job's handler once, for one slot, against s: a real store,
// migrated, the one the handler's transactions are on (PostgreSQL, MySQL or
// a SQLite file). The run holds a real lease and claims the slot as a
// scheduled run does, through cronfence.LockSlot, so run.Fence and
// run.Complete work inside the handler's own transactions exactly as in
// production; no scheduler is started. It returns what happened, read back
// from the store.
//
// The job's Name, Schedule, TimeZone, LeaseTTL, MaxAttempts (defaulting
// to cronfence.DefaultMaxAttempts, as a scheduled job's do), Timeout and
// CompletesInTx apply: a slot whose handler failed runs again, as its next
// attempt, when Run is called for it again. The fields that only a
// scheduler acts on (Disabled, CatchUpWindow, Overlap, Deadline,
// RetryBackoff, RunWhenStoreDown) do not; the run holds the job's lease,
// "job:"+Name, even under cronfence.OverlapAllow.
//
// The run's end is recorded as LockSlot records it: completed when the
// handler returned nil, failed when it returned an error (a CompletesInTx
// job's handler that returned nil without completing its slot fails too),
// and left as the taker has it when the slot was taken over.
//
// A handler's error is the result's, not the test's failure. Run fails the
// test (tb.Fatalf) when the handler could not run: a job cronfence refuses,
// a slot in the future or not claimable (completed already, out of
// attempts, its lease held by another run), a store that does not answer.
// Call it from the test's goroutine.
func Run(ctx context.Context, tb testing.TB, s store.Store, job cronfence.Job, opts *RunOpts) *Result {
	tb.Helper()
	if opts == nil {
		opts = &RunOpts{}
	}
	switch {
	case job.Handler == nil:
		tb.Fatalf("cronfencetest: job %q has no Handler", job.Name)
	case job.Timeout < 0:
		tb.Fatalf("cronfencetest: job %q: Timeout must not be negative, got %s", job.Name, job.Timeout)
	}
	if job.MaxAttempts == 0 {
		job.MaxAttempts = cronfence.DefaultMaxAttempts
	}
	if job.LeaseTTL == 0 {
		job.LeaseTTL = cronfence.DefaultLeaseTTL
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(tb.Output(), nil))
	}
	lock := cronfence.SlotLock{
		Name: job.Name, Schedule: job.Schedule, TimeZone: job.TimeZone, TTL: job.LeaseTTL, MaxAttempts: job.MaxAttempts,
		At: opts.Slot, Owner: opts.Owner, Logger: logger,
		// The slot is the test's: never wait for the coming one.
		EarlyGrace: -1,
	}
	if err := lock.Validate(); err != nil {
		tb.Fatalf("cronfencetest: %v", err)
	}

	r := &running{tb: tb, store: s, job: job, res: &Result{}}
	defer r.end()
	res, err := cronfence.LockSlot(ctx, s, lock, r.handle)
	if !res.Ran {
		if err != nil {
			tb.Fatalf("cronfencetest: job %q did not run: %v", job.Name, err)
		}
		tb.Fatalf("cronfencetest: job %q did not run: its slot %s was refused %s%s",
			job.Name, res.Slot.Format(time.RFC3339), res.Refusal, holder(res))
	}
	if r.res.Run == nil {
		tb.Fatalf("cronfencetest: job %q claimed slot %s but its handler did not start: %v", job.Name, res.Slot.Format(time.RFC3339), err)
	}
	r.res.Err = err

	// The store's, not LockSlot's, view: after a takeover LockSlot does
	// not know the slot's status, and the run row is only in the store.
	if r.res.Slot, err = s.SlotGet(ctx, job.Name, res.Slot); err != nil {
		tb.Fatalf("cronfencetest: reading slot %s of job %q after its run: %v", res.Slot.Format(time.RFC3339), job.Name, err)
	}
	r.res.Row, err = s.RunGet(ctx, r.res.Run.Lease, r.res.Run.Generation)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		tb.Fatalf("cronfencetest: reading the run row of job %q, generation %d: %v", job.Name, r.res.Run.Generation, err)
	}
	return r.res
}

// RunHandler is Run for a handler alone, run as the job HandlerJob on the
// schedule HandlerSchedule (every minute, in UTC): opts.Slot picks the
// minute.
func RunHandler(ctx context.Context, tb testing.TB, s store.Store, h cronfence.Handler, opts *RunOpts) *Result {
	tb.Helper()
	return Run(ctx, tb, s, cronfence.Job{Name: HandlerJob, Schedule: HandlerSchedule, Handler: h}, opts)
}

// errNotCompleted is the error of a CompletesInTx job's run whose handler
// returned nil without completing its slot, in the scheduler's words.
var errNotCompleted = errors.New("the handler returned success but did not complete its slot in its transaction (Job.CompletesInTx): its effect is not known to have committed")

// running is one Run in progress: what the handler's context carries to
// TakeOver, and the result being filled in.
type running struct {
	tb    testing.TB
	store store.Store
	job   cronfence.Job

	mu    sync.Mutex // TakeOver may be called from the handler's goroutines
	res   *Result
	ended bool // Run returned
}

// handle is the function LockSlot runs: the job's handler, with what a
// scheduler adds around it (the job's Timeout) and what Run reports of it.
func (r *running) handle(ctx context.Context, run *cronfence.Run) (err error) {
	r.res.Run = run
	ctx = context.WithValue(ctx, runningKey{}, r)
	if r.job.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, r.job.Timeout, &cronfence.TimeoutError{Job: r.job.Name, Timeout: r.job.Timeout})
		defer cancel()
	}
	returned := false
	defer func() {
		// Deferred so that a panicking handler (which LockSlot recovers)
		// is told too: whether its transaction completed the slot is known
		// only before LockSlot records the end, which completes it anyway
		// on success.
		r.res.CompletedInTx = r.completedInTx(run)
		var timeout *cronfence.TimeoutError
		if cause := context.Cause(ctx); err != nil && errors.As(cause, &timeout) && !errors.Is(err, cause) {
			err = fmt.Errorf("%w (%w)", err, cause)
		}
		if returned && err == nil && r.job.CompletesInTx && !r.res.CompletedInTx {
			err = errNotCompleted
		}
	}()
	err = r.job.Handler(ctx, run)
	returned = true
	r.res.HandlerErr = err
	return err
}

// completedInTx reports whether run's slot is completed under its
// generation, which before the run's end is recorded only the handler's
// own transaction can have done.
func (r *running) completedInTx(run *cronfence.Run) bool {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	sl, err := r.store.SlotGet(ctx, run.Job, run.Slot)
	if err != nil {
		r.tb.Errorf("cronfencetest: reading slot %s of job %q as its handler returned: %v", run.Slot.Format(time.RFC3339), run.Job, err)
		return false
	}
	return sl.Status == store.SlotCompleted && sl.Generation == run.Generation
}

// storeTimeout bounds the reads and writes Run makes outside the test's
// context, which may have ended.
const storeTimeout = 30 * time.Second

// runningKey is the context key of the Run in progress.
type runningKey struct{}

// holder says who had a refused slot, for a message.
func holder(res cronfence.SlotLockResult) string {
	if res.Holder == "" {
		return ""
	}
	return fmt.Sprintf(" (held by %s at generation %d)", res.Holder, res.Generation)
}
