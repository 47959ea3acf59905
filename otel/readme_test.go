package otel_test

import (
	"testing"

	"github.com/cronfence/cronfence/internal/readmesnippet"
)

// The README's "Traces" code is the body of newTracedScheduler
// (example_test.go), which ExampleNewObserver runs, line for line: a
// snippet that drifts from the code the tests run fails here.
func TestREADMETracesIsTheExample(t *testing.T) {
	t.Parallel()
	readmesnippet.Check(t, "../README.md", "### Traces", "example_test.go",
		"func newTracedScheduler(st store.Store, owner string, exp sdktrace.SpanExporter) (*cronfence.Scheduler, *sdktrace.TracerProvider, error) {")
}
