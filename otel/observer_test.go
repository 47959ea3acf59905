package otel_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cronfence/cronfence"
	cfotel "github.com/cronfence/cronfence/otel"
	"github.com/cronfence/cronfence/store/sqlite"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

var silent = slog.New(slog.NewTextHandler(io.Discard, nil))

// replicas starts n schedulers, each on its own connection to one SQLite
// file and with its own tracer provider, all exporting to exp, running job.
// The returned function stops them.
func replicas(t *testing.T, n int, exp sdktrace.SpanExporter, job cronfence.Job, tpOpts ...sdktrace.TracerProviderOption) func() {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cronfence.db")
	var scheds []*cronfence.Scheduler
	for i := range n {
		st, err := sqlite.Open(ctx, path, &sqlite.Config{BusyTimeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		if i == 0 {
			if err := st.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
		}
		tp := sdktrace.NewTracerProvider(append([]sdktrace.TracerProviderOption{sdktrace.WithSyncer(exp)}, tpOpts...)...)
		owner := "replica-" + string(rune('a'+i))
		sched, err := cronfence.New(cronfence.Config{
			Store: st, Owner: owner, Logger: silent,
			Observer: cfotel.NewObserver(tp),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := sched.Register(job); err != nil {
			t.Fatal(err)
		}
		if err := sched.Start(ctx); err != nil {
			t.Fatal(err)
		}
		scheds = append(scheds, sched)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			var wg sync.WaitGroup
			for _, s := range scheds {
				wg.Go(func() { _ = s.Stop(ctx) })
			}
			wg.Wait()
		})
	}
	t.Cleanup(stop)
	return stop
}

// flakyJob runs every second, failing each slot's first attempt, and
// sends each slot whose second attempt ran to done.
func flakyJob(done chan<- time.Time) cronfence.Job {
	return cronfence.Job{
		Name: "tick", Schedule: "* * * * * *",
		MaxAttempts: 2, RetryBackoff: 50 * time.Millisecond,
		Handler: func(ctx context.Context, run *cronfence.Run) error {
			if run.Attempt == 1 {
				return errors.New("first attempts fail")
			}
			select {
			case done <- run.Slot:
			default:
			}
			return nil
		},
	}
}

// waitSlots waits for n distinct slots on done, or fails.
func waitSlots(t *testing.T, done <-chan time.Time, n int) map[time.Time]bool {
	t.Helper()
	slots := map[time.Time]bool{}
	timeout := time.After(15 * time.Second)
	for len(slots) < n {
		select {
		case s := <-done:
			slots[s.UTC()] = true
		case <-timeout:
			t.Fatalf("only %d of %d slots ran their second attempt in 15s", len(slots), n)
		}
	}
	return slots
}

func attr(s sdktrace.ReadOnlySpan, k attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == k {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

type slotAttempt struct {
	slot    string
	attempt int64
}

// runSpans checks what holds for every run span exported, and returns
// them by slot and attempt.
func runSpans(t *testing.T, spans tracetest.SpanStubs, job string) map[slotAttempt]sdktrace.ReadOnlySpan {
	t.Helper()
	runs := map[slotAttempt]sdktrace.ReadOnlySpan{}
	for _, stub := range spans {
		s := stub.Snapshot()
		if s.Name() != "cronfence.run "+job {
			continue
		}
		slotV, _ := attr(s, cfotel.AttrSlot)
		attemptV, _ := attr(s, cfotel.AttrAttempt)
		k := slotAttempt{slotV.AsString(), attemptV.AsInt64()}
		if _, dup := runs[k]; dup {
			t.Errorf("slot %s attempt %d has two run spans", k.slot, k.attempt)
		}
		runs[k] = s
		slot, err := time.Parse(time.RFC3339Nano, k.slot)
		if err != nil {
			t.Fatalf("run span's cronfence.slot %q: %v", k.slot, err)
		}
		if got, want := s.SpanContext().TraceID(), cfotel.TraceID(job, slot); got != want {
			t.Errorf("slot %s attempt %d: trace %s, want the slot's %s", k.slot, k.attempt, got, want)
		}
		if got, want := s.Parent().SpanID(), cfotel.SpanID(job, slot, 0); got != want {
			t.Errorf("slot %s attempt %d: parent %s, want the slot's span %s", k.slot, k.attempt, got, want)
		}
		for _, key := range []attribute.Key{cfotel.AttrJob, cfotel.AttrOrigin, cfotel.AttrGeneration, cfotel.AttrOwner, cfotel.AttrOutcome, cfotel.AttrLease} {
			if _, ok := attr(s, key); !ok {
				t.Errorf("slot %s attempt %d: no attribute %s", k.slot, k.attempt, key)
			}
		}
		// The replica that ran it (the events carry Config.Owner).
		if v, _ := attr(s, cfotel.AttrOwner); !strings.HasPrefix(v.AsString(), "replica-") {
			t.Errorf("slot %s attempt %d: owner %q, want one of the replicas", k.slot, k.attempt, v.AsString())
		}
	}
	return runs
}

// Three replicas on one SQLite file, a job every second whose first
// attempts fail: each slot is one trace, every attempt of it in that trace
// once, the failed attempt's span an error, and the retry's span linked to
// it by the deterministic span ID.
func TestObserverReplicas(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	done := make(chan time.Time, 16)
	const job = "tick"
	stop := replicas(t, 3, exp, flakyJob(done), sdktrace.WithIDGenerator(cfotel.IDGenerator()))
	slots := waitSlots(t, done, 3)
	stop()

	spans := exp.GetSpans()
	runs := runSpans(t, spans, job)
	owners := map[string]bool{}
	for slot := range slots {
		first, ok1 := runs[slotAttempt{slot.Format(time.RFC3339Nano), 1}]
		retry, ok2 := runs[slotAttempt{slot.Format(time.RFC3339Nano), 2}]
		if !ok1 || !ok2 {
			t.Errorf("slot %s: run spans of attempt 1 %t, attempt 2 %t; want both", slot, ok1, ok2)
			continue
		}
		if first.Status().Code != codes.Error {
			t.Errorf("slot %s: the failed attempt's status is %v, want Error", slot, first.Status())
		}
		if v, _ := attr(first, cfotel.AttrOutcome); v.AsString() != string(cronfence.RunFailed) {
			t.Errorf("slot %s: the failed attempt's outcome is %q", slot, v.AsString())
		}
		if retry.Status().Code == codes.Error {
			t.Errorf("slot %s: the retry's status is %v", slot, retry.Status())
		}
		if v, _ := attr(retry, cfotel.AttrOrigin); v.AsString() != string(cronfence.OriginRetry) {
			t.Errorf("slot %s: the retry's origin is %q", slot, v.AsString())
		}
		if first.SpanContext().TraceID() != retry.SpanContext().TraceID() {
			t.Errorf("slot %s: attempts in two traces", slot)
		}
		for i, s := range []sdktrace.ReadOnlySpan{first, retry} {
			if got, want := s.SpanContext().SpanID(), cfotel.SpanID(job, slot, i+1); got != want {
				t.Errorf("slot %s attempt %d: span %s, want %s", slot, i+1, got, want)
			}
			v, _ := attr(s, cfotel.AttrOwner)
			owners[v.AsString()] = true
		}
		if links := retry.Links(); len(links) != 1 || links[0].SpanContext.SpanID() != first.SpanContext().SpanID() ||
			links[0].SpanContext.TraceID() != first.SpanContext().TraceID() {
			t.Errorf("slot %s: the retry's links %v, want one to attempt 1's span %s", slot, links, first.SpanContext().SpanID())
		}
	}
	t.Logf("%d spans exported, %d runs, owners of the checked slots' runs: %v", len(spans), len(runs), owners)

	// Claim spans: the won ones only, each in its slot's trace.
	for _, stub := range spans {
		s := stub.Snapshot()
		if s.Name() != "cronfence.claim "+job {
			continue
		}
		if v, _ := attr(s, cfotel.AttrWon); !v.AsBool() {
			t.Errorf("a refused claim's span was recorded: %v", s.Attributes())
		}
		slotV, _ := attr(s, cfotel.AttrSlot)
		slot, _ := time.Parse(time.RFC3339Nano, slotV.AsString())
		if s.SpanContext().TraceID() != cfotel.TraceID(job, slot) {
			t.Errorf("claim of slot %s outside the slot's trace", slotV.AsString())
		}
	}
}

// Without IDGenerator in the tracer provider, span IDs are random: each
// slot is still one trace, but a retry has no link (its ID would name no
// span).
func TestObserverWithoutIDGenerator(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	done := make(chan time.Time, 16)
	const job = "tick"
	stop := replicas(t, 2, exp, flakyJob(done))
	slots := waitSlots(t, done, 1)
	stop()

	runs := runSpans(t, exp.GetSpans(), job)
	for slot := range slots {
		retry, ok := runs[slotAttempt{slot.Format(time.RFC3339Nano), 2}]
		if !ok {
			t.Fatalf("slot %s: no span of attempt 2", slot)
		}
		if len(retry.Links()) != 0 {
			t.Errorf("slot %s: the retry links %v with random span IDs", slot, retry.Links())
		}
	}
}

// The open-span bound ends the oldest run span, as of unknown outcome.
func TestObserverMaxOpenSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	o := cfotel.NewObserver(tp, cfotel.WithMaxOpenSpans(2))
	slot := time.Date(2026, 9, 25, 0, 5, 0, 0, time.UTC)
	for i := range 3 {
		o.Observe(cronfence.RunStartEvent{Job: "j", Slot: slot.Add(time.Duration(i) * time.Minute), Attempt: 1, Generation: int64(i + 1)})
	}
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans ended, want the oldest only", len(spans))
	}
	s := spans[0].Snapshot()
	if v, _ := attr(s, cfotel.AttrOutcome); v.AsString() != cfotel.OutcomeUnknown || s.Status().Code != codes.Error {
		t.Errorf("evicted span: outcome %q, status %v", v.AsString(), s.Status())
	}
	if v, _ := attr(s, cfotel.AttrGeneration); v.AsInt64() != 1 {
		t.Errorf("evicted the run of generation %d, want 1", v.AsInt64())
	}
	// The others end with their events; an end never started is ignored.
	for i := 1; i < 4; i++ {
		o.Observe(cronfence.RunEndEvent{Job: "j", Slot: slot.Add(time.Duration(i) * time.Minute), Attempt: 1, Generation: int64(i + 1), Outcome: cronfence.RunInterrupted, Recorded: true})
	}
	spans = exp.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("%d spans ended, want 3", len(spans))
	}
	if spans[2].Status.Code != codes.Error {
		t.Errorf("an interrupted run's status is %v, want Error", spans[2].Status)
	}
}

// A manual run has its own random trace; lease loss is an event on the
// run's span.
func TestObserverManualRun(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithIDGenerator(cfotel.IDGenerator()))
	o := cfotel.NewObserver(tp)
	for gen := int64(1); gen <= 2; gen++ {
		o.Observe(cronfence.RunStartEvent{Job: "j", Lease: "job:j", Generation: gen, Attempt: 1, Origin: cronfence.OriginManual})
	}
	o.Observe(cronfence.LeaseLostEvent{Job: "j", Lease: "job:j", Generation: 2})
	for gen := int64(1); gen <= 2; gen++ {
		o.Observe(cronfence.RunEndEvent{Job: "j", Lease: "job:j", Generation: gen, Attempt: 1, Origin: cronfence.OriginManual, Outcome: cronfence.RunSucceeded, Recorded: true})
	}
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	if spans[0].SpanContext.TraceID() == spans[1].SpanContext.TraceID() || spans[0].Parent.IsValid() {
		t.Errorf("manual runs share a trace, or have a parent")
	}
	if len(spans[0].Events) != 0 || len(spans[1].Events) != 1 || spans[1].Events[0].Name != "cronfence.lease_lost" {
		t.Errorf("lease-lost events: %v, %v; want one on generation 2's span", spans[0].Events, spans[1].Events)
	}
}

func TestChain(t *testing.T) {
	var got []string
	a := cronfence.ObserverFunc(func(cronfence.Event) { got = append(got, "a") })
	b := cronfence.ObserverFunc(func(cronfence.Event) { got = append(got, "b") })
	cfotel.Chain(a, nil, b).Observe(cronfence.ClockOffsetEvent{})
	if len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("Chain told %v, want [a b]", got)
	}
}

var _ trace.TracerProvider = (*sdktrace.TracerProvider)(nil)
