package otel

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"time"

	"github.com/cronfence/cronfence/internal/traceid"
	"go.opentelemetry.io/otel/trace"
)

// TraceID is the trace of a job's slot: every attempt of the slot, on any
// replica, records its spans in it, with no coordination. It is the first
// 16 bytes of SHA-256("cronfence/trace\x00" + job + "\x00" + slot), the slot
// written in RFC 3339 with nanoseconds, in UTC. A manual run has no slot:
// its trace is random.
func TraceID(job string, slot time.Time) trace.TraceID {
	return trace.TraceID(traceid.Trace(job, slot))
}

// SpanID is the span of an attempt of a job's slot (attempt 1 the first):
// the first 8 bytes of SHA-256("cronfence/span\x00" + job + "\x00" + slot +
// "\x00" + attempt), the attempt in decimal. The run span of that attempt
// has this ID when the tracer provider makes its span IDs with
// IDGenerator; attempt 0 is the slot's own span, the parent of its runs
// and claims, which no replica records.
func SpanID(job string, slot time.Time, attempt int) trace.SpanID {
	return trace.SpanID(traceid.Span(job, slot, attempt))
}

// Traceparent is the W3C traceparent of an attempt of a job's slot,
// "00-<TraceID>-<SpanID>-01": what a command run for that attempt is handed
// (cronfence serve sets it as TRACEPARENT) so its spans are children of
// the attempt's run span (with IDGenerator in the tracer provider; without
// it, they are in the slot's trace, under a span ID no replica records).
func Traceparent(job string, slot time.Time, attempt int) string {
	return traceid.Parent(job, slot, attempt)
}

// attemptSpan is the remote, sampled span context of an attempt of a
// job's slot. Attempt 0 is the slot's own: the parent every span of the
// slot is started under, which gives them the slot's trace ID whatever
// the tracer provider's IDGenerator; sampled, so a ParentBased sampler
// (the SDK's default) records every slot (see the package comment for
// sampling a fraction of slots). An attempt's is what its retry or resume
// links to.
func attemptSpan(job string, slot time.Time, attempt int) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    TraceID(job, slot),
		SpanID:     SpanID(job, slot, attempt),
		TraceFlags: trace.FlagsSampled,
		Remote:     true,
	})
}

// Generator makes span IDs for an OpenTelemetry SDK tracer provider
// (go.opentelemetry.io/otel/sdk/trace.IDGenerator): the deterministic
// SpanID for the run spans of NewObserver's observers, random IDs for every
// other span. Install it with sdktrace.WithIDGenerator(otel.IDGenerator())
// so a run's span ID is the same on every replica, and so the link from a
// retry or a resume to the attempt before it, and a Traceparent handed to
// a command, name a span that exists.
type Generator struct{}

// IDGenerator returns a Generator.
func IDGenerator() Generator { return Generator{} }

// spanIDKey is the context key under which the observer asks the Generator
// for a run's span ID.
type spanIDKey struct{}

// wantSpanID asks the Generator for span ID id, in trace tid, for the span
// started with the returned context.
func wantSpanID(ctx context.Context, tid trace.TraceID, id trace.SpanID) context.Context {
	return context.WithValue(ctx, spanIDKey{}, wanted{tid, id})
}

type wanted struct {
	trace trace.TraceID
	span  trace.SpanID
}

// NewIDs returns a random trace ID and span ID: the observer never starts
// a root span of its own it needs an ID for.
func (Generator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	var tid trace.TraceID
	for !tid.IsValid() {
		binary.BigEndian.PutUint64(tid[:8], rand.Uint64())
		binary.BigEndian.PutUint64(tid[8:], rand.Uint64())
	}
	return tid, randomSpanID()
}

// NewSpanID returns the span ID the observer asked for a run's span
// started with ctx in trace traceID, a random one otherwise.
func (Generator) NewSpanID(ctx context.Context, traceID trace.TraceID) trace.SpanID {
	if w, ok := ctx.Value(spanIDKey{}).(wanted); ok && w.trace == traceID {
		return w.span
	}
	return randomSpanID()
}

func randomSpanID() trace.SpanID {
	var id trace.SpanID
	for !id.IsValid() {
		binary.BigEndian.PutUint64(id[:], rand.Uint64())
	}
	return id
}
