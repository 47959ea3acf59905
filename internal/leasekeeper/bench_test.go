package leasekeeper_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/internal/leasekeeper"
	"github.com/cronfence/cronfence/store"
)

// idleRenewer is never asked: the benchmark's clock does not move, so no
// renewal falls due.
type idleRenewer struct{}

func (idleRenewer) LeaseRenewBatch(context.Context, []store.LeaseRenewParams) ([]store.Lease, error) {
	return nil, nil
}

// BenchmarkHoldStopAmongManyHeld is what a run costs the keeper on a
// replica that holds thousands of leases (thousands of runs in flight):
// one Hold as it starts, one Stop as it ends. cpu-ns/op counts the
// process's CPU, the keeper's own goroutine included.
func BenchmarkHoldStopAmongManyHeld(b *testing.B) {
	for _, held := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
			c := clock.NewFake(time.Unix(1_000_000, 0))
			k := leasekeeper.New(idleRenewer{}, leasekeeper.Options{Clock: c})
			defer k.Close()
			ctx := context.Background()
			for i := range held {
				h := k.Hold(ctx, store.Lease{Name: fmt.Sprintf("job:%d", i), Owner: "a", Generation: 1}, time.Minute, c.Now())
				defer h.Stop()
			}
			lease := store.Lease{Name: "job:bench", Owner: "a", Generation: 1}
			cpu0 := cpuTime()
			for b.Loop() {
				h := k.Hold(ctx, lease, time.Minute, c.Now())
				_ = h.Stop()
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
