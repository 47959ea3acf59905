package adminview_test

import (
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/adminview"
	"github.com/cronfence/cronfence/internal/traceid"
	"github.com/cronfence/cronfence/store"
)

// A run's JSON has null for what it lacks (a manual run's slot, no error)
// and never null where clients iterate or read fields (logs, result).
func TestRunOf(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 600_000_000, time.FixedZone("x", 3600))
	got, err := json.Marshal(adminview.RunOf(store.Run{ID: 7, Job: "nightly", Manual: true, Owner: "r1", Generation: 3, Attempt: 1, StartedAt: start, Success: true}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":7,"jobId":"nightly","slot":null,"manual":true,"catchUp":false,"owner":"r1","generation":3,"attempt":1,` +
		`"startedAt":"2026-01-02T02:04:05.6Z","finishedAt":null,"success":true,"result":{"skipped":false,"reason":""},"error":null,"logs":[]}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if v := adminview.RunOf(store.Run{Error: "boom", Skipped: true, Reason: "x"}); v.Error == nil || *v.Error != "boom" || !v.Result.Skipped {
		t.Fatalf("an error and a skip: %+v", v)
	}
}

// A scheduled run's view names its slot's OpenTelemetry trace, the one
// the otel module records and serve hands its commands: the same for
// every attempt, on any replica; a manual run has none.
func TestRunOfTraceID(t *testing.T) {
	slot := time.Date(2026, 9, 25, 0, 5, 0, 0, time.UTC)
	first := adminview.RunOf(store.Run{Job: "nightly", Slot: slot, Attempt: 1, Owner: "r1"})
	again := adminview.RunOf(store.Run{Job: "nightly", Slot: slot.In(time.FixedZone("x", 3600)), Attempt: 2, Owner: "r2"})
	want := traceid.Trace("nightly", slot)
	if first.TraceID != hex.EncodeToString(want[:]) || again.TraceID != first.TraceID || len(first.TraceID) != 32 {
		t.Fatalf("traceId %q and %q; want both %x", first.TraceID, again.TraceID, want)
	}
	if !strings.Contains(traceid.Parent("nightly", slot, 2), "-"+first.TraceID+"-") {
		t.Fatalf("traceparent %q is not in trace %s", traceid.Parent("nightly", slot, 2), first.TraceID)
	}
	if other := adminview.RunOf(store.Run{Job: "other", Slot: slot}); other.TraceID == first.TraceID {
		t.Fatal("two jobs' slots at one instant share a trace")
	}
	if manual := adminview.RunOf(store.Run{Job: "nightly", Manual: true}); manual.TraceID != "" {
		t.Fatalf("a manual run has traceId %q; want none", manual.TraceID)
	}
}
