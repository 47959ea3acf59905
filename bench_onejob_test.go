package cronfence

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// oneJobSlots is how many whole-second slots BenchmarkSchedulerOneJobLatency
// measures per iteration.
const oneJobSlots = 20

// BenchmarkSchedulerOneJobLatency runs 3 replicas (each on its own pool)
// with one job due every second, on the real clock and the real database
// clock (one host: the two are the same clock), for oneJobSlots seconds per
// iteration. It reports the percentiles of slot → handler start, the
// claims refused not_due per slot (a replica that fired early by the
// database clock, and tried again 20 ms later), and the range of the
// offsets the replicas measured (0 is right: they share the clock).
func BenchmarkSchedulerOneJobLatency(b *testing.B) {
	base, schema := benchSchema(b)
	var (
		mu        sync.Mutex
		latencies []time.Duration
		notDue    int
		offsets   []time.Duration
		slots     int
		// slot → the winning claim's answer, and → a losing one's
		claimed, lost []time.Duration
		// slot → a claim statement sent, and its duration, at the driver
		sends, durs []time.Duration
	)
	observe := ObserverFunc(func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		switch e := e.(type) {
		case ClaimEvent:
			if e.Refusal == store.ClaimNotDue {
				notDue++
			}
			if e.Won {
				claimed = append(claimed, time.Since(e.Slot))
			} else {
				lost = append(lost, time.Since(e.Slot))
			}
		case ClockOffsetEvent:
			offsets = append(offsets, e.Offset)
		}
	})
	for b.Loop() {
		var runs []Run
		replicas := make([]*Scheduler, 3)
		tracers := make([]*latClaims, 3)
		for i := range replicas {
			tracers[i] = &latClaims{}
			s, err := New(Config{Store: replicaStore(b, base, schema, tracers[i].trace, nil), Owner: fmt.Sprintf("replica-%d-%d", i, os.Getpid()), Logger: quiet, Retention: -1, Observer: observe})
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Register(Job{Name: "tick", Schedule: "* * * * * *", Handler: func(_ context.Context, run *Run) error {
				d := time.Since(run.Slot)
				mu.Lock()
				latencies = append(latencies, d)
				runs = append(runs, *run)
				mu.Unlock()
				return nil
			}}); err != nil {
				b.Fatal(err)
			}
			replicas[i] = s
		}
		mu.Lock()
		notDue, latencies, claimed, lost = 0, latencies[:0], claimed[:0], lost[:0]
		mu.Unlock()
		for _, s := range replicas {
			if err := s.Start(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
		from := time.Now().Truncate(time.Second).Add(time.Second)
		time.Sleep(time.Until(from.Add(oneJobSlots*time.Second - 100*time.Millisecond)))
		var wg sync.WaitGroup
		for _, s := range replicas {
			wg.Go(func() { _ = s.Stop(context.Background()) })
		}
		wg.Wait()
		seen := map[int64]int{}
		for _, r := range runs {
			if seen[r.Slot.Unix()]++; seen[r.Slot.Unix()] > 1 {
				b.Fatalf("slot %s ran twice", r.Slot)
			}
		}
		for _, tr := range tracers {
			for _, c := range tr.seen {
				sends = append(sends, c.sent.Sub(c.slot))
				durs = append(durs, c.done.Sub(c.sent))
			}
		}
		slots += oneJobSlots
	}
	slices.Sort(sends)
	slices.Sort(durs)
	slices.Sort(latencies)
	slices.Sort(offsets)
	slices.Sort(claimed)
	slices.Sort(lost)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(benchPercentile(latencies, 0.5)), "p50-ms")
	b.ReportMetric(ms(benchPercentile(latencies, 0.99)), "p99-ms")
	b.ReportMetric(ms(benchPercentile(claimed, 0.5)), "won-claim-answered-p50-ms")
	b.ReportMetric(ms(benchPercentile(lost, 0.5)), "lost-claim-answered-p50-ms")
	b.ReportMetric(ms(benchPercentile(sends, 0.5)), "claim-sent-p50-ms")
	b.ReportMetric(ms(benchPercentile(durs, 0.5)), "claim-statement-p50-ms")
	b.ReportMetric(float64(notDue)/float64(oneJobSlots), "not-due/slot")
	b.ReportMetric(float64(offsets[0])/float64(time.Microsecond), "offset-min-µs")
	b.ReportMetric(float64(offsets[len(offsets)-1])/float64(time.Microsecond), "offset-max-µs")
}
