// Package otel traces cronfence's runs with OpenTelemetry. It is a module
// of its own, so cronfence itself pulls in no OpenTelemetry.
//
// NewObserver returns a cronfence.Observer (set it as Config.Observer, with
// Chain beside another) that records:
//
//   - a span "cronfence.run JOB" per run on this replica, from its
//     RunStartEvent to its RunEndEvent, with attributes cronfence.job,
//     .slot, .attempt, .origin, .generation, .lease, .owner,
//     and at its end .outcome and .recorded; a failed or interrupted run,
//     or one whose end the store could not record, has status Error. A
//     lost lease or a refused fence is an event on the span.
//   - a span "cronfence.claim JOB", of no duration, per claim this replica
//     won (or that buffered a slot). Every replica tries every slot, so a
//     span per refused claim would be (replicas - 1) spans per slot saying
//     only that another won; WithAllClaims records them too.
//   - a span "cronfence.skip JOB", of no duration, per skip this replica
//     recorded (reason, holder).
//
// # One trace per slot, with no coordination
//
// A slot's trace ID is derived from its job and instant (TraceID), so
// every attempt of the slot, on any replica, records its spans in one
// trace without anything stored or exchanged. The observer starts each
// span of a slot under a remote parent of that trace ID: the slot's own
// span, SpanID(job, slot, 0), which no replica records (a backend shows
// the slot's runs and claims as children of a parent it never received).
// A manual run has no slot: its span is the root of a random trace.
//
// The OpenTelemetry API cannot choose a span's ID; the SDK's IDGenerator
// does. Install this package's in the tracer provider,
//
//	sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(otel.IDGenerator()), ...)
//
// and the span of a slot's attempt n has ID SpanID(job, slot, n), the
// same on every replica (every other span gets a random ID). Then a retry
// or a resume (attempt n > 1) links to attempt n-1's span, which exists
// wherever it ran, and Traceparent(job, slot, n) names the run's span, so
// a command handed it as TRACEPARENT records its spans as the run's
// children. Without the generator, the trace ID still holds, span IDs are
// random, and a retry carries no link (the ID would name no span); the
// attempts are told apart by cronfence.attempt.
//
// # Sampling
//
// The slot's parent span context is sampled, so a ParentBased sampler (the
// SDK's default) records every slot. To record a fraction of the slots,
// the same ones on every replica, sample remote parents by trace ID:
//
//	sdktrace.ParentBased(sdktrace.TraceIDRatioBased(f),
//		sdktrace.WithRemoteParentSampled(sdktrace.TraceIDRatioBased(f)))
//
// # Open spans
//
// A run's span stays open until its RunEndEvent. The observer holds at
// most WithMaxOpenSpans of them (DefaultMaxOpenSpans): past that, it ends
// the one started first with outcome "unknown" and status Error, so a run
// whose end is never observed is not held forever.
package otel
