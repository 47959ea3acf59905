package cronfence

// Origin says why a slot was claimed, or a run made: it is on every claim
// event, every run (Run.Origin, its start and end events) and, for the
// origins that need a word, the run's first log line.
type Origin string

const (
	// OriginScheduled: the slot's timer fired (or fired again, after the
	// store said the slot was not due yet).
	OriginScheduled Origin = "scheduled"
	// OriginCatchUp: a slot missed at start-up or during an outage, inside
	// its job's CatchUpWindow.
	OriginCatchUp Origin = "catch_up"
	// OriginResume: a slot whose run was interrupted (its owner died or
	// lost the lease), claimed again with one more attempt.
	OriginResume Origin = "resume"
	// OriginRetry: a slot whose last attempt failed (its handler returned
	// an error), claimed again after the job's RetryBackoff with one more
	// attempt.
	OriginRetry Origin = "retry"
	// OriginBuffered: a slot that waited for the overlapping run to end
	// (overlap policy buffer-one, or a claim that came after that run took
	// the lease).
	OriginBuffered Origin = "buffered"
	// OriginManual: a run started by Trigger; it has no slot.
	OriginManual Origin = "manual"
	// OriginFailOpen: a run made without a lease because the store could
	// not be reached when its slot came due (Job.RunWhenStoreDown).
	OriginFailOpen Origin = "fail_open"
)

// onTimer reports whether claims of this origin come from the timer heap,
// and so are retried through it: a slot refused as not yet due, or held by
// a deposed writer, is fired again shortly (a retry of a failed attempt
// only while the job's next slot is not due). A resume is tried again by the
// next resume scan, a buffered slot by catch-up or the job's next run.
func (o Origin) onTimer() bool {
	return o == OriginScheduled || o == OriginCatchUp || o == OriginRetry
}
