package otel

import (
	"container/list"
	"context"
	"sync"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/store"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the observer's tracer.
const ScopeName = "github.com/cronfence/cronfence/otel"

// DefaultMaxOpenSpans is how many run spans an observer keeps open at most
// when WithMaxOpenSpans is not given.
const DefaultMaxOpenSpans = 4096

// The attributes of the observer's spans.
const (
	AttrJob        = attribute.Key("cronfence.job")
	AttrSlot       = attribute.Key("cronfence.slot") // RFC 3339, nanoseconds, UTC; absent for a manual run
	AttrAttempt    = attribute.Key("cronfence.attempt")
	AttrOrigin     = attribute.Key("cronfence.origin")
	AttrGeneration = attribute.Key("cronfence.generation")
	AttrLease      = attribute.Key("cronfence.lease")
	AttrOwner      = attribute.Key("cronfence.owner")
	AttrOutcome    = attribute.Key("cronfence.outcome")  // a run's: success, failure, interrupted, or unknown when evicted
	AttrRecorded   = attribute.Key("cronfence.recorded") // a run's: whether the store recorded its end
	AttrWon        = attribute.Key("cronfence.won")      // a claim's
	AttrRefusal    = attribute.Key("cronfence.refusal")  // a refused claim's
	AttrSlotStatus = attribute.Key("cronfence.recorded_status")
	AttrReason     = attribute.Key("cronfence.skip.reason")
	AttrHolder     = attribute.Key("cronfence.skip.holder")
)

// OutcomeUnknown is the outcome of a run span ended because the observer
// held too many open (WithMaxOpenSpans) before the run's end was observed.
const OutcomeUnknown = "unknown"

// Option configures NewObserver.
type Option func(*Observer)

// WithMaxOpenSpans bounds how many run spans the observer holds open,
// waiting for their RunEndEvent. A run whose end never comes (its process
// stopped observing it) would otherwise be held forever: past the bound,
// the span started first is ended, with outcome OutcomeUnknown and status
// Error. Defaults to DefaultMaxOpenSpans, far above the runs one replica
// has in flight.
func WithMaxOpenSpans(n int) Option {
	return func(o *Observer) {
		if n > 0 {
			o.maxOpen = n
		}
	}
}

// WithAllClaims records a claim span for every claim this replica made,
// refused ones included. By default only won claims and claims that
// buffered a slot are recorded: every replica tries every slot, so the
// refusals are (replicas - 1) spans per slot telling that another replica
// won it.
func WithAllClaims() Option { return func(o *Observer) { o.allClaims = true } }

// Observer is a cronfence.Observer that records the scheduler's runs,
// claims and skips as OpenTelemetry spans. Make it with NewObserver and set
// it as Config.Observer (with Chain, beside another observer).
type Observer struct {
	tracer    trace.Tracer
	maxOpen   int
	allClaims bool

	mu    sync.Mutex
	open  map[runKey]*list.Element // of *openRun
	order *list.List               // of *openRun, started first at the front
}

var _ cronfence.Observer = (*Observer)(nil)

// runKey identifies a run on this replica: its slot's attempt, under its
// lease's generation (two manual runs differ in generation).
type runKey struct {
	job        string
	slot       time.Time
	attempt    int
	lease      string
	generation int64
}

type openRun struct {
	key  runKey
	span trace.Span
}

// NewObserver returns an Observer recording spans with tp's tracer named
// ScopeName. See the package comment for the spans it records.
func NewObserver(tp trace.TracerProvider, opts ...Option) *Observer {
	o := &Observer{
		tracer:  tp.Tracer(ScopeName),
		maxOpen: DefaultMaxOpenSpans,
		open:    make(map[runKey]*list.Element),
		order:   list.New(),
	}
	for _, opt := range opts {
		opt(o)
	}
	return o
}

// Observe records e.
func (o *Observer) Observe(e cronfence.Event) {
	switch e := e.(type) {
	case cronfence.RunStartEvent:
		o.runStart(e)
	case cronfence.RunEndEvent:
		o.runEnd(e)
	case cronfence.ClaimEvent:
		o.claim(e)
	case cronfence.SkipEvent:
		o.skip(e)
	case cronfence.LeaseLostEvent:
		o.leaseEvent(e.Job, e.Lease, e.Generation, "cronfence.lease_lost")
	case cronfence.FenceRefusedEvent:
		o.leaseEvent(e.Job, e.Lease, e.Generation, "cronfence.fence_refused")
	}
}

// slotContext returns a context whose remote parent is the slot's span, or
// the background context for a manual run (no slot).
func slotContext(job string, slot time.Time) context.Context {
	if slot.IsZero() {
		return context.Background()
	}
	return trace.ContextWithRemoteSpanContext(context.Background(), attemptSpan(job, slot, 0))
}

// common are the attributes of every span: the event's job, slot, origin
// and owner (the replica that observed it).
func common(job string, slot time.Time, origin cronfence.Origin, owner string) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs, AttrJob.String(job))
	if !slot.IsZero() {
		attrs = append(attrs, AttrSlot.String(slot.UTC().Format(time.RFC3339Nano)))
	}
	if origin != "" {
		attrs = append(attrs, AttrOrigin.String(string(origin)))
	}
	if owner != "" {
		attrs = append(attrs, AttrOwner.String(owner))
	}
	return attrs
}

func (o *Observer) runStart(e cronfence.RunStartEvent) {
	ctx := slotContext(e.Job, e.Slot)
	var want trace.SpanID
	if !e.Slot.IsZero() {
		want = SpanID(e.Job, e.Slot, e.Attempt)
		ctx = wantSpanID(ctx, TraceID(e.Job, e.Slot), want)
	}
	attrs := append(common(e.Job, e.Slot, e.Origin, e.Owner),
		AttrAttempt.Int(e.Attempt), AttrGeneration.Int64(e.Generation))
	if e.Lease != "" {
		attrs = append(attrs, AttrLease.String(e.Lease))
	}
	_, span := o.tracer.Start(ctx, "cronfence.run "+e.Job,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	// A retry or a resume links to the attempt it continues, by that
	// attempt's deterministic span ID: only when this span got its own
	// (the provider makes IDs with IDGenerator), so the ID names a span.
	if e.Attempt > 1 && !e.Slot.IsZero() && span.SpanContext().SpanID() == want {
		span.AddLink(trace.Link{
			SpanContext: attemptSpan(e.Job, e.Slot, e.Attempt-1),
			Attributes:  []attribute.KeyValue{AttrAttempt.Int(e.Attempt - 1)},
		})
	}

	k := runKey{e.Job, e.Slot.UTC(), e.Attempt, e.Lease, e.Generation}
	var evicted []*openRun
	o.mu.Lock()
	if old, ok := o.open[k]; ok { // a start seen twice: end the first
		evicted = append(evicted, old.Value.(*openRun))
		o.order.Remove(old)
	}
	o.open[k] = o.order.PushBack(&openRun{key: k, span: span})
	for o.order.Len() > o.maxOpen {
		front := o.order.Front()
		r := front.Value.(*openRun)
		o.order.Remove(front)
		delete(o.open, r.key)
		evicted = append(evicted, r)
	}
	o.mu.Unlock()
	for _, r := range evicted {
		r.span.SetAttributes(AttrOutcome.String(OutcomeUnknown))
		r.span.SetStatus(codes.Error, "cronfence: the run's end was not observed")
		r.span.End()
	}
}

func (o *Observer) runEnd(e cronfence.RunEndEvent) {
	k := runKey{e.Job, e.Slot.UTC(), e.Attempt, e.Lease, e.Generation}
	o.mu.Lock()
	el, ok := o.open[k]
	if ok {
		delete(o.open, k)
		o.order.Remove(el)
	}
	o.mu.Unlock()
	if !ok {
		return // evicted, or started before the observer was set
	}
	span := el.Value.(*openRun).span
	span.SetAttributes(AttrOutcome.String(string(e.Outcome)), AttrRecorded.Bool(e.Recorded))
	switch {
	case e.Outcome == cronfence.RunFailed:
		span.SetStatus(codes.Error, "cronfence: the run failed")
	case e.Outcome == cronfence.RunInterrupted:
		span.SetStatus(codes.Error, "cronfence: the run was interrupted")
	case !e.Recorded:
		span.SetStatus(codes.Error, "cronfence: the run's end could not be recorded (its slot taken over, or the store unreachable)")
	}
	span.End()
}

// leaseEvent adds an event named name to the open run spans of job under
// lease's generation.
func (o *Observer) leaseEvent(job, lease string, generation int64, name string) {
	var spans []trace.Span
	o.mu.Lock()
	for k, el := range o.open {
		if k.job == job && k.lease == lease && k.generation == generation {
			spans = append(spans, el.Value.(*openRun).span)
		}
	}
	o.mu.Unlock()
	for _, s := range spans {
		s.AddEvent(name)
	}
}

func (o *Observer) claim(e cronfence.ClaimEvent) {
	// A claim that recorded a skip is left out too: its SkipEvent follows,
	// and records the skip with its reason.
	if !e.Won && e.Recorded != store.SlotBuffered && !o.allClaims {
		return
	}
	attrs := append(common(e.Job, e.Slot, e.Origin, e.Owner), AttrWon.Bool(e.Won))
	if e.Refusal != "" {
		attrs = append(attrs, AttrRefusal.String(string(e.Refusal)))
	}
	if e.Recorded != "" {
		attrs = append(attrs, AttrSlotStatus.String(string(e.Recorded)))
	}
	o.instant(e.Job, e.Slot, "cronfence.claim "+e.Job, attrs)
}

func (o *Observer) skip(e cronfence.SkipEvent) {
	attrs := append(common(e.Job, e.Slot, e.Origin, e.Owner), AttrReason.String(e.Reason))
	if e.Holder != "" {
		attrs = append(attrs, AttrHolder.String(e.Holder))
	}
	o.instant(e.Job, e.Slot, "cronfence.skip "+e.Job, attrs)
}

// instant records a span of no duration in the slot's trace.
func (o *Observer) instant(job string, slot time.Time, name string, attrs []attribute.KeyValue) {
	now := time.Now()
	_, span := o.tracer.Start(slotContext(job, slot), name,
		trace.WithTimestamp(now), trace.WithAttributes(attrs...))
	span.End(trace.WithTimestamp(now))
}

// Chain returns an Observer that tells each of observers, in order, of
// every event; nil ones are left out.
func Chain(observers ...cronfence.Observer) cronfence.Observer {
	var all []cronfence.Observer
	for _, ob := range observers {
		if ob != nil {
			all = append(all, ob)
		}
	}
	return cronfence.ObserverFunc(func(e cronfence.Event) {
		for _, ob := range all {
			ob.Observe(e)
		}
	})
}
