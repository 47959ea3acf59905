package metrics_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/metrics"
)

// BenchmarkObserveRun is the metrics' cost of one scheduled run on the
// scheduler's goroutines: its claim, start and end events.
func BenchmarkObserveRun(b *testing.B) {
	col, err := metrics.New(prometheus.NewRegistry(), &metrics.Options{Replica: "r"})
	if err != nil {
		b.Fatal(err)
	}
	slot := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		gen := int64(i + 1)
		col.Observe(cronfence.ClaimEvent{Job: "job", Slot: slot, Won: true})
		col.Observe(cronfence.RunStartEvent{Job: "job", Slot: slot, Lease: "job:job", Generation: gen, Attempt: 1, Latency: time.Millisecond})
		col.Observe(cronfence.RunEndEvent{Job: "job", Slot: slot, Lease: "job:job", Generation: gen, Attempt: 1,
			Outcome: cronfence.RunSucceeded, Duration: time.Second, Recorded: true})
	}
}
