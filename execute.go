package cronfence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/internal/leasekeeper"
	"github.com/cronfence/cronfence/store"
)

// runSpec is one run about to start.
type runSpec struct {
	job     *registered
	slot    time.Time   // zero for a manual run
	lease   store.Lease // zero when the store was unreachable (fail-open)
	attempt int
	origin  Origin
	sent    time.Time // when the claim was sent, on the scheduler's clock
	// startAt, when not zero, is the real instant (monotonic) before which
	// the handler may not start: the store committed the claim ahead of
	// its slot and said how long was left (store.SlotClaimResult.Wait).
	startAt time.Time
}

// start runs a handler in its own goroutine: under its lease, renewed by the
// replica's keeper, and finished with one round trip.
func (s *Scheduler) start(spec runSpec) {
	s.beside(func() { s.execute(spec) })
}

// beside runs f on a goroutine of its own, beside the loop: counted as a
// run, so Stop waits for it, and as busy, so the tests' harness waits for
// it to settle. Runs, and the loop's slow chores (the absence checks,
// pruning, recording a stall's skips), go this way.
func (s *Scheduler) beside(f func()) {
	s.busy.Add(1)
	s.runs.Add(1)
	go func() {
		defer s.runs.Done()
		defer s.busy.Add(-1)
		f()
	}()
}

func (s *Scheduler) execute(spec runSpec) {
	job := spec.job
	ctx := s.runsCtx
	var hold *leasekeeper.Hold
	if spec.lease.Generation > 0 {
		lease := spec.lease
		hold = s.keeper.HoldFunc(s.runsCtx, lease, job.LeaseTTL, spec.sent, func(error) {
			s.observe(LeaseLostEvent{Job: job.Name, Lease: lease.Name, Generation: lease.Generation})
		})
		// Stopped only once the run's end is recorded: until then the lease
		// is renewed, so a run whose handler returned is not taken for dead
		// while its finish is retried.
		defer hold.Stop()
		ctx = hold.Context()
	}
	// A claim committed ahead of its slot: the handler starts once the
	// slot is due by the database clock. Stopped meanwhile (Stop's grace
	// over), the handler does not start at all, and the run ends as one
	// cut short by shutdown: left for a live replica to resume.
	notStarted := waitUntil(ctx, spec.startAt)
	if job.Timeout > 0 {
		var stop func()
		ctx, stop = s.withTimeout(ctx, job.Timeout, &TimeoutError{Job: job.Name, Timeout: job.Timeout})
		defer stop()
	}

	logs := &logBuffer{}
	attrs := []any{"job", job.Name, "generation", spec.lease.Generation, "attempt", spec.attempt}
	if !spec.slot.IsZero() {
		attrs = append(attrs, "slot", spec.slot)
	}
	logger := runLogger(s.log.Handler(), logs, attrs)
	if line := spec.firstLine(); line != "" {
		logger.Info(line)
	}
	var lease *Lease
	if spec.lease.Generation > 0 {
		lease = newLease(spec.lease, s.store)
	}
	run := &Run{
		Job: job.Name, Slot: spec.slot, Generation: spec.lease.Generation, Lease: spec.lease.Name, Attempt: spec.attempt,
		Origin: spec.origin, Owner: s.cfg.Owner, Logger: logger, lease: lease, logs: logs,
		observe: s.observe,
	}

	started := s.cfg.Clock.Now()
	var latency time.Duration
	if !spec.slot.IsZero() {
		latency = s.scheduleNow().Sub(spec.slot)
	}
	s.observe(RunStartEvent{
		Job: job.Name, Slot: spec.slot, Lease: spec.lease.Name, Generation: spec.lease.Generation, Attempt: spec.attempt,
		Origin: spec.origin, Latency: latency,
	})
	err := notStarted
	if err == nil {
		err = callHandler(ctx, job.Handler, run)
	}
	duration := s.cfg.Clock.Now().Sub(started)
	ended := s.scheduleNow()
	var lost error
	if hold != nil {
		lost = hold.Lost()
	}
	err = handlerError(ctx, err, lost, s.log, attrs)
	if err != nil {
		// The error goes into the run row's error; the scheduler's log gets
		// it too, but not the run's own log lines.
		s.log.Error("cronfence: run failed", append(attrs, "error", err)...)
	}
	outcome, recorded, buffered := s.finish(spec, hold, err, logs.snapshot(), ended)
	s.logRunEnd(spec, outcome, duration, recorded)
	s.observe(RunEndEvent{
		Job: job.Name, Slot: spec.slot, Lease: spec.lease.Name, Generation: spec.lease.Generation, Attempt: spec.attempt,
		Origin: spec.origin, Outcome: outcome, Duration: duration, Recorded: recorded,
	})
	if !buffered.IsZero() {
		// A slot that waited for this run: buffer-one's overlap, or a slot
		// of any policy whose claim came after this run took the lease
		// (store.Store.SlotClaim).
		s.runBuffered(job, buffered)
	}
}

// logRunEnd writes the one line that ends every run: what ran, how it
// ended and how long it took, at INFO when it succeeded and WARN when not
// (a failure's error was logged as it happened).
func (s *Scheduler) logRunEnd(spec runSpec, outcome RunOutcome, took time.Duration, recorded bool) {
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
	s.log.Log(context.Background(), level, "cronfence: run ended", attrs...)
}

// finish ends the run, whose handler returned at ended (by the database
// clock, as this replica reads it). It returns how the run ended, whether
// the store recorded it, and the job's buffered slot that waits for this
// run to end, if any. A run that held a lease keeps it renewed (hold)
// until its end is recorded: see endRecorder.
func (s *Scheduler) finish(spec runSpec, hold *leasekeeper.Hold, runErr error, logs []string, ended time.Time) (outcome RunOutcome, recorded bool, buffered time.Time) {
	job := spec.job
	row := store.Run{
		Manual: spec.origin == OriginManual, CatchUp: spec.origin == OriginCatchUp, Attempt: spec.attempt, Success: runErr == nil, Logs: logs,
		StartedAt: spec.lease.AcquiredAt,
		// When the handler returned, not when the end reaches the store:
		// under load the two are seconds apart, and a quick run would
		// look like one outgrowing its interval (slow_run). Never before
		// the run's start: the offset this replica reads the database
		// clock with is measured, so off by a little.
		FinishedAt: latest(ended, spec.lease.AcquiredAt),
	}
	outcome = RunSucceeded
	if runErr != nil {
		row.Error = runErr.Error()
		outcome = RunFailed
	}
	if spec.origin == OriginFailOpen {
		// A fail-open run held no lease: record what happened, if the store
		// is back.
		ctx, cancel := s.bounded(context.Background())
		defer cancel()
		row.Job, row.Slot, row.Owner, row.StartedAt, row.FinishedAt = job.Name, spec.slot, s.cfg.Owner, time.Time{}, time.Time{}
		const failed = "cronfence: could not record a run made without a lease"
		if _, err := s.store.RunInsert(ctx, row); err != nil {
			s.warnRepeated(failed, "job", job.Name, "error", err)
			return outcome, false, time.Time{}
		}
		s.failures.over(failed)
		return outcome, true, time.Time{}
	}
	p := store.SlotFinishParams{
		Job: job.Name, Slot: spec.slot, LeaseName: spec.lease.Name, Owner: spec.lease.Owner,
		Generation: spec.lease.Generation, Status: store.SlotCompleted, Run: row,
	}
	if runErr != nil {
		p.Status = store.SlotFailed
	}
	// Whether the run's own transaction completed its slot (Run.Complete,
	// or complete() from a command's psql) is decided by the finish's one
	// statement, on the database that holds the slot: no read before it,
	// which after a failover may reach a server whose data no longer
	// counts (a demoted primary answers reads).
	var retry retryPlan
	switch why := s.interruption(spec, runErr); {
	case why != "":
		// Cut short from outside (shutdown, lease loss) with attempts
		// left: the slot stays running and the lease is released, so a
		// live replica resumes it (attempt + 1) as soon as the lease is
		// free, instead of the slot counting as failed; unless its
		// transaction completed it: its effect is committed, and its end is
		// recorded as any finished run's.
		p.Status = store.SlotRunning
		p.NotCompletedError = "interrupted by " + why + ", left for a replica to resume: " + row.Error
	case runErr == nil && job.CompletesInTx && !spec.slot.IsZero():
		// A success counts only with its slot completed by the handler's
		// transaction (see Job.CompletesInTx); else the slot is left to
		// resume, or on its last attempt ends failed.
		p.NotCompletedError = errNotCompleted.Error()
		if spec.attempt < job.MaxAttempts {
			p.Status = store.SlotRunning
		} else {
			p.Status = store.SlotFailed
		}
	case runErr != nil && !spec.slot.IsZero():
		// Failed: retried after the job's backoff while attempts remain,
		// and open to a retry by another replica until the next slot.
		retry = s.planRetry(spec)
		p.RetryUntil = retry.until
	}
	res, err := s.ender().record(hold, job.LeaseTTL, p)
	if !spec.slot.IsZero() && (err != nil || res.SlotStatus == store.SlotRunning) {
		s.watchOwn(job.Name, spec.slot) // dead now, or once its lease expires: to resume
	}
	if err != nil {
		s.log.Error("cronfence: could not record the end of a run; its slot is resumed by another replica once its lease expires",
			"job", job.Name, "slot", spec.slot, "generation", spec.lease.Generation, "error", err)
		return outcome, false, time.Time{}
	}
	if !res.SlotUpdated && p.Status == store.SlotRunning {
		return RunInterrupted, true, time.Time{} // resumed already, as it was left to be
	}
	if !spec.slot.IsZero() && !res.SlotUpdated {
		s.log.Warn("cronfence: the slot was taken over before this run ended; its result was not recorded on the slot",
			"job", job.Name, "slot", spec.slot, "generation", spec.lease.Generation)
		// A failure whatever the handler returned: the run row says so too.
		return RunFailed, false, res.Buffered
	}
	if p.NotCompleted(res.SlotStatus) { // set only for a slot (a manual run has none)
		if runErr == nil {
			s.log.Warn("cronfence: the handler returned success without completing its slot in its transaction; it is not counted as completed",
				"job", job.Name, "slot", spec.slot, "attempt", spec.attempt, "generation", spec.lease.Generation, "slot_status", res.SlotStatus)
		}
		if res.SlotStatus == store.SlotRunning {
			// A slot buffered behind this one waits for its resumed run.
			return RunInterrupted, true, time.Time{}
		}
		return RunFailed, true, res.Buffered
	}
	if runErr != nil && res.SlotStatus == store.SlotFailed && !spec.slot.IsZero() {
		s.armRetry(spec, retry)
	}
	return outcome, true, res.Buffered
}

// errNotCompleted is the error of a CompletesInTx job's run whose handler
// returned nil with its slot not completed by its transaction.
var errNotCompleted = errors.New("the handler returned success but did not complete its slot in its transaction (Job.CompletesInTx): its effect is not known to have committed")

// interruption says why a scheduled run that ended in error was cut short
// from outside ("shutdown", "lease loss": the keeper found the lease lost,
// or the handler's fence did), or "" when it counts as failed: its handler
// failed, it timed out, or it was its slot's last attempt (a slot left
// running then would stay so, since no claim may take it again).
func (s *Scheduler) interruption(spec runSpec, runErr error) string {
	if runErr == nil || spec.slot.IsZero() || spec.attempt >= spec.job.MaxAttempts {
		return ""
	}
	switch {
	case s.runsCtx.Err() != nil:
		return "shutdown"
	case errors.Is(runErr, ErrLeaseLost):
		return "lease loss"
	}
	return ""
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
// done, and its end is recorded, unless the slot was taken over meanwhile
// (the finish tells), rather than left to be run a second time; log says so.
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

// withTimeout is context.WithTimeoutCause on the scheduler's clock.
func (s *Scheduler) withTimeout(parent context.Context, d time.Duration, cause error) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	stop := s.afterFunc(d, func() { cancel(cause) })
	return ctx, func() { stop(); cancel(context.Canceled) }
}

// afterFunc is time.AfterFunc on the scheduler's clock: f runs on a
// goroutine of its own once d passes, unless stop (called once) comes
// first.
func (s *Scheduler) afterFunc(d time.Duration, f func()) (stop func()) {
	timer := s.cfg.Clock.NewTimer(d)
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

// ender records the end of this scheduler's runs; it stops retrying once
// shutdown has cancelled the runs.
func (s *Scheduler) ender() endRecorder {
	return endRecorder{store: s.store, log: s.log, stop: s.runsCtx.Done(), batch: &s.finishes}
}

// waitUntil returns at the real instant at (read on this process's
// monotonic clock, as store.SlotClaimResult.Wait is counted; zero: at
// once), the last moments slept exactly (a timer wakes up to a millisecond
// late), or earlier, with an error saying why, once ctx ends.
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
