package cronfence

import (
	"time"

	"github.com/cronfence/cronfence/internal/monitor"
	"github.com/cronfence/cronfence/store"
)

// Observer is told what the scheduler does as it happens: the hook for
// metrics and alert delivery, so the library itself stays free of any
// metrics system. Set Config.Observer.
//
// Observe is called from the scheduler's goroutines, concurrently and
// synchronously: it must return quickly and never block (hand slow work,
// like an HTTP call, to a goroutine of its own).
type Observer interface {
	Observe(Event)
}

// ObserverFunc adapts a function to an Observer.
type ObserverFunc func(Event)

// Observe calls f(e).
func (f ObserverFunc) Observe(e Event) { f(e) }

// Event is one of the *Event types of this package. Switch on its type;
// new event types may be added, so keep a default case.
type Event interface{ event() }

// ClaimEvent: this replica tried to claim a slot, and the store answered
// (a claim that could not reach the store is no event).
type ClaimEvent struct {
	Job     string
	Slot    time.Time
	Owner   string // this replica (Config.Owner)
	Won     bool
	Refusal store.ClaimRefusal // why not, when !Won
	Origin  Origin             // why it was claimed: its timer, catch-up, a resume, a buffered slot
	// Recorded is what this claim recorded on a slot overlapped by another
	// run (store.SlotSkipped, followed by a SkipEvent, or
	// store.SlotBuffered); empty otherwise.
	Recorded store.SlotStatus
}

// RunStartEvent: a handler started on this replica.
type RunStartEvent struct {
	Job        string
	Slot       time.Time // zero for a manual run
	Owner      string    // this replica (Config.Owner)
	Lease      string    // the lease the run holds; empty without one
	Generation int64     // zero for a run without a lease (RunWhenStoreDown)
	Attempt    int
	Origin     Origin
	// Latency is from the slot instant (for a scheduled run, plus the job's
	// jitter's delay) to the handler's start on this
	// replica's clock; zero for manual runs.
	Latency time.Duration
}

// RunOutcome is how a run ended.
type RunOutcome string

const (
	RunSucceeded   RunOutcome = "success"
	RunFailed      RunOutcome = "failure"
	RunInterrupted RunOutcome = "interrupted" // cut short by shutdown or lease loss, left for a replica to resume
)

// RunEndEvent: a handler returned on this replica and its end was recorded
// (or could not be).
type RunEndEvent struct {
	Job        string
	Slot       time.Time
	Owner      string // this replica (Config.Owner)
	Lease      string
	Generation int64
	Attempt    int
	Origin     Origin
	Outcome    RunOutcome
	Duration   time.Duration
	// Recorded is false when the store could not record the end (the slot
	// was taken over, or the store was unreachable).
	Recorded bool
}

// SkipEvent: this replica recorded a skipped slot or refused a manual run
// because another run held the job's lease.
type SkipEvent struct {
	Job    string
	Slot   time.Time // zero for a refused manual run
	Owner  string    // this replica (Config.Owner), which recorded or was refused the skip
	Reason string    // the skip row's: "already_executing", "lease_busy" or "passed_over"
	Holder string    // the owner holding the lease, when known
	// Origin is the refused claim's, OriginManual for a refused Trigger;
	// empty for a slot given up or passed over (Store.SlotSkip).
	Origin Origin
}

// LeaseLostEvent: a renewal found a run's lease gone (expired and taken
// over, or released); the run's context was cancelled.
type LeaseLostEvent struct {
	Job        string
	Lease      string
	Generation int64
}

// FenceRefusedEvent: Run.Fence refused a write because the run's lease was
// lost.
type FenceRefusedEvent struct {
	Job        string
	Lease      string
	Generation int64
}

// ClockOffsetEvent: the offset of this replica's clock from the database
// clock was measured (positive: this clock is ahead).
type ClockOffsetEvent struct {
	Offset time.Duration
}

// AlertEvent: an absence check raised (Raised) or resolved an alert. Only
// the replica whose check changed the alert's state is told, so each alert
// is delivered once across replicas.
//
// An alert an operator acknowledged is not raised again while it stays
// the same; when it changes (store.AlertRaiseParams.Fingerprint), the
// acknowledgement ends and the alert is raised again: Raised, with
// EndedAck the acknowledgement that ended, told once across replicas too.
type AlertEvent struct {
	Alert  store.Alert
	Raised bool // false: resolved
	// EndedAck is, on an alert raised again because it changed since it
	// was acknowledged, that acknowledgement; zero otherwise.
	EndedAck store.AlertAck
}

func (ClaimEvent) event()        {}
func (RunStartEvent) event()     {}
func (RunEndEvent) event()       {}
func (SkipEvent) event()         {}
func (LeaseLostEvent) event()    {}
func (FenceRefusedEvent) event() {}
func (ClockOffsetEvent) event()  {}
func (AlertEvent) event()        {}

// MonitorLeaseName is the lease held by the replica that runs the absence
// checks. Its holder keeps it from pass to pass (renewing it each pass,
// with a TTL of two passes), so the checks run once per CheckEvery across
// the cluster, and another replica takes over within two passes of the
// holder's death. Readers judge whether the checks run by its renewals.
const MonitorLeaseName = monitor.LeaseName

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
	// OriginBackfill: a slot of a backfill's range that never ran
	// (Scheduler.Backfill), or failed, with IncludeFailed.
	OriginBackfill Origin = "backfill"
)

// onTimer reports whether claims of this origin come from the timer heap,
// and so are retried through it: a slot refused as not yet due, or held by
// a deposed writer, is fired again shortly (a retry of a failed attempt
// only while the job's next slot is not due). A resume is tried again by the
// next resume scan, a buffered slot by catch-up or the job's next run.
func (o Origin) onTimer() bool {
	return o == OriginScheduled || o == OriginCatchUp || o == OriginRetry
}
