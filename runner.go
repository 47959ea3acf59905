package cronfence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/internal/leasekeeper"
	"github.com/cronfence/cronfence/internal/runlog"
	"github.com/cronfence/cronfence/store"
)

// The third stage of the slot pipeline: a claimed slot's handler runs
// under its lease, kept renewed until the run's end is recorded, and its
// end goes to the finisher. The scheduler's runs and LockSlot's go through
// the same runner; what differs between them is a runPolicy.

// runSpec is one run about to start.
type runSpec struct {
	job     *registered
	slot    time.Time   // zero for a manual run
	lease   store.Lease // zero when the store was unreachable (fail-open)
	attempt int
	origin  Origin
	sent    time.Time // when the claim was sent, on the runner's clock
	// startAt, when not zero, is the real instant (monotonic) before which
	// the handler may not start: the store committed the claim ahead of
	// its slot and said how long was left (store.SlotClaimResult.Wait).
	startAt time.Time
}

// runPolicy is what differs between the scheduler's runs and LockSlot's.
type runPolicy struct {
	// resume: a run cut short from outside (shutdown, lease loss) with
	// attempts left leaves its slot running, for a live replica to resume;
	// otherwise it ends failed, for the next call to run again.
	resume bool
	// stampEnd: a run's FinishedAt is when its handler returned, by the
	// database-corrected clock; otherwise the store's clock as it writes.
	stampEnd bool
	// logEnd: a failure and the end of every run are logged.
	logEnd bool
}

// runner runs handlers under their leases and hands each end to its
// finisher.
type runner struct {
	e      *env
	policy runPolicy
	keeper *leasekeeper.Keeper
	finish *finisher
	// buffered starts the slot that waited for a run that just ended
	// (claimer.runBuffered); nil: none.
	buffered func(job *registered, slot time.Time)
	// caughtUp goes on with a catch-up of policy all once the run of its
	// slot ended (claimer.caughtUp); nil: none.
	caughtUp func(job *registered, slot time.Time)
	// backfilled goes on with a backfill once the run of its slot ended,
	// with the slot's status as the run left it (backfiller.ran); nil:
	// none.
	backfilled func(job *registered, slot time.Time, status store.SlotStatus)

	ctx    context.Context // parent of every run's context; cancelled after the shutdown grace
	cancel context.CancelFunc
	runs   sync.WaitGroup
}

// start runs spec on a goroutine of its own.
func (r *runner) start(spec runSpec) {
	r.beside(func(context.Context) { r.execute(spec) })
}

// beside runs f on a goroutine of its own, with the runs' context: Stop
// waits for it through the shutdown grace, and cancels it after.
func (r *runner) beside(f func(ctx context.Context)) {
	r.e.Busy.Add(1)
	r.runs.Add(1)
	go func() {
		defer r.runs.Done()
		defer r.e.Busy.Add(-1)
		f(r.ctx)
	}()
}

// stop lets the runs finish within grace, or until ctx ends if it had not
// when stop was called, then cancels them and waits for them to return.
func (r *runner) stop(ctx context.Context, grace time.Duration) {
	deadline := ctx.Done()
	if ctx.Err() != nil {
		deadline = nil // ended before Stop: the program's context, not a deadline (Scheduler.Stop)
	}
	done := make(chan struct{})
	go func() { r.runs.Wait(); close(done) }()
	timer := r.e.cfg.Clock.NewTimer(grace)
	select {
	case <-done:
	case <-timer.C():
		r.e.Log.Warn("cronfence: shutdown grace passed; cancelling running handlers", "grace", grace)
	case <-deadline:
		r.e.Log.Warn("cronfence: the context given to Stop ended during the shutdown grace; cancelling running handlers", "cause", context.Cause(ctx))
	}
	timer.Stop()
	r.cancel()
	<-done
}

// execute runs spec's handler and records its end.
func (r *runner) execute(spec runSpec) runEnd {
	e, job := r.e, spec.job
	ctx := r.ctx
	var hold *leasekeeper.Hold
	if spec.lease.Generation > 0 {
		lease := spec.lease
		hold = r.keeper.HoldFunc(ctx, lease, job.LeaseTTL, spec.sent, func(error) {
			e.observe(LeaseLostEvent{Job: job.Name, Lease: lease.Name, Generation: lease.Generation})
		})
		// Stopped only once the run's end is recorded: until then the lease
		// is renewed, so a run whose handler returned is not taken for dead
		// while its end is retried.
		defer hold.Stop()
		ctx = hold.Context()
	}
	// A claim committed ahead of its slot: the handler starts once the slot
	// is due by the database clock. Cancelled meanwhile, it does not start.
	notStarted := waitUntil(ctx, spec.startAt)
	if job.Timeout > 0 {
		var stop func()
		ctx, stop = withTimeout(e.cfg.Clock, ctx, job.Timeout, &TimeoutError{Job: job.Name, Timeout: job.Timeout})
		defer stop()
	}

	run, attrs := r.newRun(spec)
	started := e.cfg.Clock.Now()
	var latency time.Duration
	if !spec.slot.IsZero() {
		latency = e.Now().Sub(spec.slot)
		if spec.origin == OriginScheduled {
			latency -= job.delay(spec.slot) // from when the jitter let it start
		}
	}
	e.observe(RunStartEvent{
		Job: job.Name, Slot: spec.slot, Owner: e.cfg.Owner, Lease: spec.lease.Name, Generation: spec.lease.Generation, Attempt: spec.attempt,
		Origin: spec.origin, Latency: latency,
	})
	err := notStarted
	if err == nil {
		err = callHandler(ctx, job.Handler, run)
	}
	duration := e.cfg.Clock.Now().Sub(started)
	var ended time.Time
	if r.policy.stampEnd {
		ended = e.Now()
	}
	var lost error
	if hold != nil {
		lost = hold.Lost()
	}
	err = handlerError(ctx, err, lost, e.Log, attrs)
	if err != nil && r.policy.logEnd {
		// The run row gets the error; the scheduler's log gets it too, but
		// not the run's own lines.
		e.Log.Error("cronfence: run failed", append(attrs, "error", err)...)
	}
	end := r.finish.finish(spec, hold, err, run.logs.Lines(), ended)
	end.err, end.lost = err, lost
	if r.policy.logEnd {
		logRunEnd(e.Log, spec, end.outcome, duration, end.recorded)
	}
	e.observe(RunEndEvent{
		Job: job.Name, Slot: spec.slot, Owner: e.cfg.Owner, Lease: spec.lease.Name, Generation: spec.lease.Generation, Attempt: spec.attempt,
		Origin: spec.origin, Outcome: end.outcome, Duration: duration, Recorded: end.recorded,
	})
	if !end.buffered.IsZero() && r.buffered != nil {
		// A slot that waited for this run: buffer-one's overlap, or a slot
		// whose claim came after this run took the lease.
		r.buffered(job, end.buffered)
	}
	if spec.origin == OriginCatchUp && job.CatchUp == CatchUpAll && r.caughtUp != nil {
		r.caughtUp(job, spec.slot)
	}
	if spec.origin == OriginBackfill && r.backfilled != nil {
		r.backfilled(job, spec.slot, end.slotStatus)
	}
	return end
}

// newRun is the Run a handler gets, and the attributes of the lines
// logged of it; the run's own lines start with why it runs, when that is
// not simply its timer.
func (r *runner) newRun(spec runSpec) (*Run, []any) {
	e, job := r.e, spec.job
	logs := &runlog.Buffer{}
	attrs := []any{"job", job.Name, "generation", spec.lease.Generation, "attempt", spec.attempt}
	if !spec.slot.IsZero() {
		attrs = append(attrs, "slot", spec.slot)
	}
	logger := runlog.Logger(e.Log.Handler(), logs, attrs)
	if line := spec.firstLine(); line != "" {
		logger.Info(line)
	}
	run := &Run{
		Job: job.Name, Slot: spec.slot, Generation: spec.lease.Generation, Lease: spec.lease.Name, Attempt: spec.attempt,
		Origin: spec.origin, Owner: e.cfg.Owner, Logger: logger, logs: logs, observe: e.observe,
	}
	if spec.lease.Generation > 0 {
		run.lease = newLease(spec.lease, e.Store)
	}
	if job.stored != nil {
		run.Args = job.stored.args
	}
	return run, attrs
}

// logRunEnd writes the line that ends every run: what ran, how it ended
// and how long it took; INFO when it succeeded, WARN when not.
func logRunEnd(log *slog.Logger, spec runSpec, outcome RunOutcome, took time.Duration, recorded bool) {
	attrs := []any{"job", spec.job.Name}
	if !spec.slot.IsZero() {
		attrs = append(attrs, "slot", spec.slot)
	}
	attrs = append(attrs, "attempt", spec.attempt, "origin", spec.origin, "result", outcome, "duration", took,
		"generation", spec.lease.Generation)
	if !recorded {
		attrs = append(attrs, "recorded", false)
	}
	level := slog.LevelInfo
	if outcome != RunSucceeded || !recorded {
		level = slog.LevelWarn
	}
	log.Log(context.Background(), level, "cronfence: run ended", attrs...)
}

// callHandler runs the handler, turning a panic into an error so the run
// is still finished and its lease released.
func callHandler(ctx context.Context, h Handler, run *Run) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cronfence: handler of job %q panicked: %v", run.Job, p)
		}
	}()
	return h(ctx, run)
}

// handlerError is a handler's error as its run records it: with why the
// run's context ended, if it did while the handler ran, and the loss of its
// lease (lost; nil while the lease held), each said once. A handler that
// succeeded although its lease was lost keeps its nil error: its work is
// done, and its end is recorded unless the slot was taken over meanwhile.
func handlerError(ctx context.Context, err, lost error, log *slog.Logger, attrs []any) error {
	if cause := context.Cause(ctx); err != nil && cause != nil && !errors.Is(err, cause) {
		err = fmt.Errorf("%w (%w)", err, cause)
	}
	switch {
	case lost != nil && err != nil && !errors.Is(err, lost):
		err = errors.Join(err, lost)
	case lost != nil && err == nil:
		log.Warn("cronfence: the run's lease was lost while it ran, but its handler succeeded; recording its end unless the slot was taken over",
			append(attrs, "error", lost)...)
	}
	return err
}

// withTimeout is context.WithTimeoutCause on clk.
func withTimeout(clk Clock, parent context.Context, d time.Duration, cause error) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	stop := afterFunc(clk, d, func() { cancel(cause) })
	return ctx, func() { stop(); cancel(context.Canceled) }
}

// afterFunc is time.AfterFunc on clk: f runs on a goroutine of its own
// once d passes, unless stop (called once) comes first.
func afterFunc(clk Clock, d time.Duration, f func()) (stop func()) {
	timer := clk.NewTimer(d)
	done := make(chan struct{})
	go func() {
		select {
		case <-timer.C():
			f()
		case <-done:
		}
	}()
	return func() {
		timer.Stop()
		close(done)
	}
}

// waitUntil returns at the real instant at (read on the monotonic clock,
// as store.SlotClaimResult.Wait is counted; zero: at once), the last
// moments slept exactly (a timer wakes up to a millisecond late), or
// earlier, with an error saying why, once ctx ends.
func waitUntil(ctx context.Context, at time.Time) error {
	if at.IsZero() {
		return nil
	}
	if d := time.Until(at) - clock.TimerSlack; d > 0 {
		timer := time.NewTimer(d)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("cronfence: the run ended before its slot came (its claim committed ahead of it): %w", context.Cause(ctx))
		}
	}
	clock.Real{}.SleepExactly(time.Until(at))
	return nil
}

// firstLine is the first line a run of this origin logs, saying why it
// runs when that is not simply its timer; "" otherwise.
func (spec runSpec) firstLine() string {
	slot := spec.slot.UTC().Format(time.RFC3339)
	switch spec.origin {
	case OriginCatchUp:
		late := spec.lease.AcquiredAt.Sub(spec.slot)
		return fmt.Sprintf("Catch-up run for missed slot %s (%ds late)", slot, int64(late.Seconds()))
	case OriginBackfill:
		return fmt.Sprintf("Backfill run for slot %s (attempt %d)", slot, spec.attempt)
	case OriginResume:
		return fmt.Sprintf("Resuming slot %s: its previous run was interrupted (attempt %d of %d)", slot, spec.attempt, spec.job.MaxAttempts)
	case OriginRetry:
		return fmt.Sprintf("Retrying slot %s after a failed attempt (attempt %d of %d)", slot, spec.attempt, spec.job.MaxAttempts)
	case OriginBuffered:
		return fmt.Sprintf("Buffered run for slot %s, after the overlapping run ended", slot)
	case OriginFailOpen:
		return fmt.Sprintf("Running slot %s without a lease: the store could not be reached (RunWhenStoreDown)", slot)
	}
	return ""
}
