package cronfence

import (
	"errors"
	"fmt"
	"time"

	"github.com/cronfence/cronfence/store"
)

// ErrLeaseLost is returned when work ran under a lease that was lost before
// it finished (taken over, or expired while renewals failed), and by
// Lease.Fence when the lease is no longer held by its generation. It is the
// same value as store.ErrLeaseLost, so either can be checked with errors.Is.
var ErrLeaseLost = store.ErrLeaseLost

// errInvalid wraps store.ErrInvalidArgument with a message naming the
// argument.
func errInvalid(msg string) error {
	return errors.Join(errors.New("cronfence: "+msg), store.ErrInvalidArgument)
}

// ErrAlreadyExecuting is returned by Trigger when a run of the job holds its
// lease. The error is an *AlreadyExecutingError naming the holder.
var ErrAlreadyExecuting = errors.New("cronfence: job already executing")

// ErrUnknownJob is returned for a job name that was never registered.
var ErrUnknownJob = errors.New("cronfence: unknown job")

// ErrNotStarted is returned by calls that need a started scheduler.
var ErrNotStarted = errors.New("cronfence: scheduler not started")

// AlreadyExecutingError says who holds a job's lease, and carries the skip
// row recorded for the refused manual run.
type AlreadyExecutingError struct {
	Job    string
	Holder store.Lease // as last seen; zero fields when unknown
	Skip   store.Run   // the run row recorded for the refusal
}

func (e *AlreadyExecutingError) Error() string {
	return fmt.Sprintf("cronfence: job %q already executing (lease held by %s at generation %d)", e.Job, e.Holder.Owner, e.Holder.Generation)
}

// Is makes errors.Is(err, ErrAlreadyExecuting) true.
func (e *AlreadyExecutingError) Is(target error) bool { return target == ErrAlreadyExecuting }

// TimeoutError is the cause (context.Cause) of a run's context when the
// job's Timeout passed: the handler's context is cancelled with it.
type TimeoutError struct {
	Job     string
	Timeout time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("cronfence: job %q timed out after %s", e.Job, e.Timeout)
}

func unknownJob(name string) error { return fmt.Errorf("%w: %q", ErrUnknownJob, name) }
