package otel_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/cronfence/cronfence"
	cfotel "github.com/cronfence/cronfence/otel"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/sqlite"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// A tracer provider with the package's IDGenerator, so run spans get the
// same IDs on every replica, and an observer recording into it. Here its
// spans go to an in-memory exporter; a service exports them with OTLP.
func ExampleNewObserver() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "cronfence-otel-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "cronfence.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		log.Fatal(err)
	}

	exp := tracetest.NewInMemoryExporter()
	sched, tp, err := newTracedScheduler(st, "replica-1", exp)
	if err != nil {
		log.Fatal(err)
	}
	defer tp.Shutdown(ctx)
	err = sched.Register(cronfence.Job{
		Name:     "nightly-report",
		Schedule: "0 0 1 1 *",
		Handler:  func(ctx context.Context, run *cronfence.Run) error { return nil },
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := sched.Start(ctx); err != nil {
		log.Fatal(err)
	}
	if _, err := sched.Trigger(ctx, "nightly-report"); err != nil {
		log.Fatal(err)
	}
	if err := sched.Stop(ctx); err != nil { // waits for the run's end
		log.Fatal(err)
	}

	_ = tp.ForceFlush(ctx)
	for _, s := range exp.GetSpans() {
		fmt.Println(s.Name, s.Status.Code)
	}
	// Output:
	// cronfence.run nightly-report Unset
}

// newTracedScheduler is README.md's "Traces" snippet, line for line
// (TestREADMETracesIsTheExample): a scheduler whose runs are traced into
// exp, with the package's IDGenerator.
func newTracedScheduler(st store.Store, owner string, exp sdktrace.SpanExporter) (*cronfence.Scheduler, *sdktrace.TracerProvider, error) {
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithIDGenerator(cfotel.IDGenerator()), // a run's span ID: the same on every replica
		sdktrace.WithBatcher(exp),                      // OTLP in a service; in memory here
	)
	sched, err := cronfence.New(cronfence.Config{
		Store:    st,
		Owner:    owner,
		Observer: cfotel.NewObserver(tp),
	})
	return sched, tp, err
}

// A command run for a slot's second attempt is handed the W3C traceparent
// of that attempt's span.
func ExampleTraceparent() {
	slot, _ := time.Parse(time.RFC3339, "2026-09-25T00:05:00Z")
	fmt.Println("TRACEPARENT=" + cfotel.Traceparent("daily-close", slot, 2))
	// Output:
	// TRACEPARENT=00-0b2326a477ce9688ca654669008945d9-320ba1962624a61d-01
}
