package cronfence

import (
	"time"

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
	Lease      string    // the lease the run holds; empty without one
	Generation int64     // zero for a run without a lease (RunWhenStoreDown)
	Attempt    int
	Origin     Origin
	// Latency is from the slot instant to the handler's start on this
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
