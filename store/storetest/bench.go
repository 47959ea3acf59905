package storetest

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// Benchmark measures each store operation on its own path: the latency
// of each call and, where the store counts them, the round trips it
// spends. A store's benchmark calls it once:
//
//	func BenchmarkStore(b *testing.B) { storetest.Benchmark(b, open) }
//
// and runs it with go test -run '^$' -bench Store ./store/NAME/. Each
// benchmark sets up, untimed and uncounted, the state its path needs, and
// checks after every call that the call took that path, so a figure cannot
// silently describe another one. Calls run one at a time, after a warm-up
// that opens the connection and prepares every statement on it: the
// figures are the steady state of a long-running replica.
//
// Metrics: p50-µs, p90-µs, p99-µs and max-µs are percentiles (nearest
// rank) of the latency of the measured calls, timed one by one;
// roundtrips/op is counted by the store's Counter, and connects/op appears
// only if a connection had to be opened during the measured calls.
func Benchmark(b *testing.B, open func(b *testing.B) BenchBundle) {
	b.Run("LeaseAcquire", func(b *testing.B) { benchLeaseAcquire(b, open(b)) })
	b.Run("LeaseRenew", func(b *testing.B) { benchLeaseRenew(b, open(b)) })
	b.Run("LeaseRelease", func(b *testing.B) { benchLeaseRelease(b, open(b)) })
	b.Run("LeaseFence", func(b *testing.B) { benchLeaseFence(b, open(b)) })
	b.Run("SlotClaim", func(b *testing.B) { benchSlotClaim(b, open) })
	b.Run("SlotFinish", func(b *testing.B) { benchSlotFinish(b, open(b)) })
	b.Run("SlotClaimBatch", func(b *testing.B) { benchClaimBatch(b, open(b)) })
	b.Run("SlotFinishBatch", func(b *testing.B) { benchFinishBatchOp(b, open(b)) })
}

// BenchBundle is what a store's benchmark hands Benchmark for one
// benchmark.
type BenchBundle struct {
	// Store is a freshly migrated, empty store of this benchmark's own.
	Store store.Store
	// Counter counts the round trips Store sends; nil for a store in the
	// process (SQLite), which has none.
	Counter Counter
	// Begin opens a transaction of the kind the store's users open, for
	// the fence; commit commits it, rollback ends it after a failure.
	Begin func(ctx context.Context) (tx any, commit func() error, rollback func(), err error)
}

// Counter counts a store's round trips and the connections it opened
// (pgtest.RoundTrips is one).
type Counter interface {
	Total() int64
	Connects() int64
}

const (
	// benchJob and benchLease are the job and lease every benchmark uses.
	benchJob   = "bench"
	benchLease = "job:bench"

	// benchOwner holds leases and claims; rivalOwner is another replica.
	benchOwner = "bench-host:1:aaaa"
	rivalOwner = "bench-host:2:bbbb"

	// benchTTL is long enough that no lease expires during a run.
	benchTTL = time.Hour

	// benchMaxAttempts is the MaxAttempts of every claim.
	benchMaxAttempts = 3

	// warmupCalls run before the measured ones, through the same steps.
	warmupCalls = 20
)

// benchEpoch is the first slot instant. Slots are one a minute from here,
// long past by the database clock, so every claim is due.
var benchEpoch = time.Date(2020, time.January, 1, 0, 0, 0, 0, time.UTC)

func benchSlotAt(i int) time.Time { return benchEpoch.Add(time.Duration(i) * time.Minute) }

// BenchCall is one measured store operation. Its i is the call's index,
// counted from the first warm-up call, for calls that need distinct slots.
type BenchCall struct {
	// before puts the store in the state the call's path needs. It runs
	// before every call, untimed and uncounted. Optional.
	Before func(ctx context.Context, i int) error
	// call is the measured operation. It returns an error when the
	// operation failed or did not take the benchmark's path.
	Call func(ctx context.Context, i int) error
	// after runs after every call, like before. Optional.
	After func(ctx context.Context, i int) error
}

// Measure runs c warmupCalls times, then once per b.Loop iteration, timing
// each call and counting its round trips (when trips is not nil), and
// reports the figures. A store's own benchmarks use it too.
func Measure(b *testing.B, trips Counter, c BenchCall) {
	b.Helper()
	ctx := b.Context()
	untimed := func(i int, f func(context.Context, int) error, what string) {
		if f == nil {
			return
		}
		b.StopTimer()
		if err := f(ctx, i); err != nil {
			b.Fatalf("%s call %d: %v", what, i, err)
		}
		b.StartTimer()
	}
	i := 0
	for ; i < warmupCalls; i++ {
		untimed(i, c.Before, "before")
		if err := c.Call(ctx, i); err != nil {
			b.Fatalf("warm-up call %d: %v", i, err)
		}
		untimed(i, c.After, "after")
	}

	var (
		latencies        []time.Duration
		roundTrips, conn int64
	)
	count := func() (int64, int64) {
		if trips == nil {
			return 0, 0
		}
		return trips.Total(), trips.Connects()
	}
	for b.Loop() {
		untimed(i, c.Before, "before")
		trips0, conn0 := count()
		start := time.Now()
		err := c.Call(ctx, i)
		elapsed := time.Since(start)
		trips1, conn1 := count()
		roundTrips += trips1 - trips0
		conn += conn1 - conn0
		if err != nil {
			b.Fatalf("call %d: %v", i, err)
		}
		latencies = append(latencies, elapsed)
		untimed(i, c.After, "after")
		i++
	}

	n := float64(len(latencies))
	if trips != nil {
		b.ReportMetric(float64(roundTrips)/n, "roundtrips/op")
	}
	if conn > 0 {
		b.ReportMetric(float64(conn)/n, "connects/op")
	}
	slices.Sort(latencies)
	for _, p := range []struct {
		unit string
		q    float64
	}{{"p50-µs", 0.50}, {"p90-µs", 0.90}, {"p99-µs", 0.99}, {"max-µs", 1}} {
		b.ReportMetric(benchMicros(benchPercentile(latencies, p.q)), p.unit)
	}
}

// benchPercentile returns the q-quantile of sorted by the nearest-rank method.
func benchPercentile(sorted []time.Duration, q float64) time.Duration {
	rank := int(math.Ceil(q * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}

func benchMicros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// benchAcquire takes benchLease for owner; it must be free.
func benchAcquire(ctx context.Context, s store.Store, owner string) (store.Lease, error) {
	l, ok, err := s.LeaseAcquire(ctx, store.LeaseAcquireParams{Name: benchLease, Owner: owner, TTL: benchTTL})
	if err != nil {
		return store.Lease{}, err
	}
	if !ok {
		return store.Lease{}, fmt.Errorf("lease %q not acquired: held by %+v", benchLease, l)
	}
	return l, nil
}

// benchRelease gives held back; it must still be held.
func benchRelease(ctx context.Context, s store.Store, held store.Lease) error {
	ok, err := s.LeaseRelease(ctx, held.Ref())
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("lease %+v was no longer held at release", held)
	}
	return nil
}

// benchClaim claims benchSlotAt(i) for owner; the claim must succeed.
func benchClaim(ctx context.Context, s store.Store, owner string, i int) (store.SlotClaimResult, error) {
	r, err := s.SlotClaim(ctx, benchClaimParams(owner, i))
	if err != nil {
		return r, err
	}
	if !r.Claimed {
		return r, fmt.Errorf("slot %d not claimed: refused %q", i, r.Refusal)
	}
	return r, nil
}

// benchClaimRefused claims benchSlotAt(i) for owner; the claim must be refused with want.
func benchClaimRefused(ctx context.Context, s store.Store, owner string, i int, want store.ClaimRefusal) error {
	r, err := s.SlotClaim(ctx, benchClaimParams(owner, i))
	if err != nil {
		return err
	}
	if r.Claimed || r.Refusal != want {
		return fmt.Errorf("slot %d: claimed %v, refusal %q; want refusal %q", i, r.Claimed, r.Refusal, want)
	}
	return nil
}

// benchClaimOverlapped claims benchSlotAt(i) for owner while another run holds the
// lease; the claim must be refused with already_executing and record the
// slot as skipped, with its skip run row.
func benchClaimOverlapped(ctx context.Context, s store.Store, owner string, slot time.Time) error {
	p := benchClaimParams(owner, 0)
	p.Slot = slot
	r, err := s.SlotClaim(ctx, p)
	if err != nil {
		return err
	}
	if r.Claimed || r.Refusal != store.ClaimHeld || r.Recorded != store.SlotSkipped || r.SkipRun.ID == 0 {
		return fmt.Errorf("slot %s: claimed %v, refusal %q, recorded %q, skip run %d; want refusal %q, recorded %q and a skip run",
			slot.Format(time.RFC3339Nano), r.Claimed, r.Refusal, r.Recorded, r.SkipRun.ID, store.ClaimHeld, store.SlotSkipped)
	}
	return nil
}

// benchWon claims a fresh slot whose lease is free, each call, the one
// before finished untimed; sent ahead (WaitDue) when ahead is set.
func benchWon(b *testing.B, bb BenchBundle, ahead bool) {
	s, trips := bb.Store, bb.Counter
	var last store.SlotClaimResult
	Measure(b, trips, BenchCall{
		Before: func(ctx context.Context, _ int) error {
			if !last.Claimed {
				return nil
			}
			return benchFinish(ctx, s, last)
		},
		Call: func(ctx context.Context, i int) (err error) {
			p := benchClaimParams(benchOwner, i)
			p.WaitDue = ahead
			if last, err = s.SlotClaim(ctx, p); err == nil && !last.Claimed {
				err = fmt.Errorf("slot %d not claimed: refused %q", i, last.Refusal)
			}
			return err
		},
	})
}

func benchClaimParams(owner string, i int) store.SlotClaimParams {
	return store.SlotClaimParams{
		Job: benchJob, Slot: benchSlotAt(i), LeaseName: benchLease, Owner: owner,
		TTL: benchTTL, MaxAttempts: benchMaxAttempts,
	}
}

// benchFinish completes the claim c, as a successful run would: the slot
// completed, the lease released and a run row with a few log lines written.
func benchFinish(ctx context.Context, s store.Store, c store.SlotClaimResult) error {
	r, err := s.SlotFinish(ctx, store.SlotFinishParams{
		Job: c.Slot.Job, Slot: c.Slot.Slot, LeaseName: c.Lease.Name, Owner: c.Lease.Owner,
		Generation: c.Lease.Generation, Status: store.SlotCompleted,
		Run: store.Run{
			Attempt: c.Slot.Attempts, Success: true,
			Logs: []string{"starting", "processed 42 records", "done"},
		},
	})
	if err != nil {
		return err
	}
	if !r.SlotUpdated || !r.LeaseReleased {
		return fmt.Errorf("finish of slot %s: slot updated %v, lease released %v; want both", c.Slot.Slot, r.SlotUpdated, r.LeaseReleased)
	}
	return nil
}

// benchLeaseAcquire takes a lease that exists and was released, as a job
// lease is between runs: the acquisition updates the row on conflict.
func benchLeaseAcquire(b *testing.B, bb BenchBundle) {
	s, trips := bb.Store, bb.Counter
	var held store.Lease
	Measure(b, trips, BenchCall{
		Before: func(ctx context.Context, _ int) error {
			if held.Generation == 0 {
				return nil // the first call inserts the row
			}
			return benchRelease(ctx, s, held)
		},
		Call: func(ctx context.Context, _ int) (err error) {
			held, err = benchAcquire(ctx, s, benchOwner)
			return err
		},
	})
}

// benchLeaseRenew extends a held lease, as the lease keeper does every
// TTL/3.
func benchLeaseRenew(b *testing.B, bb BenchBundle) {
	s, trips := bb.Store, bb.Counter
	held, err := benchAcquire(b.Context(), s, benchOwner)
	if err != nil {
		b.Fatal(err)
	}
	Measure(b, trips, BenchCall{
		Call: func(ctx context.Context, _ int) error {
			_, err := s.LeaseRenew(ctx, store.LeaseRenewParams{LeaseRef: held.Ref(), TTL: benchTTL})
			return err
		},
	})
}

// benchLeaseRelease gives back a held lease.
func benchLeaseRelease(b *testing.B, bb BenchBundle) {
	s, trips := bb.Store, bb.Counter
	var held store.Lease
	Measure(b, trips, BenchCall{
		Before: func(ctx context.Context, _ int) (err error) {
			held, err = benchAcquire(ctx, s, benchOwner)
			return err
		},
		Call: func(ctx context.Context, _ int) error {
			return benchRelease(ctx, s, held)
		},
	})
}

// benchLeaseFence fences a transaction of the kind the store's users open
// (bb.Begin) on a held lease. Only the fence's own statement is measured:
// the transaction begins before it and commits after it, untimed and
// uncounted.
func benchLeaseFence(b *testing.B, bb BenchBundle) {
	s, trips := bb.Store, bb.Counter
	held, err := benchAcquire(b.Context(), s, benchOwner)
	if err != nil {
		b.Fatal(err)
	}
	var (
		tx       any
		commit   func() error
		rollback func()
	)
	defer func() {
		// A failed call leaves its transaction open, holding its
		// connection (and on SQLite the write lock).
		if rollback != nil {
			rollback()
		}
	}()
	Measure(b, trips, BenchCall{
		Before: func(ctx context.Context, _ int) (err error) {
			tx, commit, rollback, err = bb.Begin(ctx)
			return err
		},
		Call: func(ctx context.Context, _ int) error {
			return s.LeaseFence(ctx, tx, held.Name, held.Generation)
		},
		After: func(context.Context, int) error {
			err := commit()
			rollback = nil
			return err
		},
	})
}

// benchSlotClaim claims slots on each path a replica meets when a slot
// falls due:
//
//   - won: a fresh slot, its lease free (the previous run finished): the
//     slot is claimed and the lease taken.
//   - won-sent-ahead: the same, sent as a replica's timer sends it.
//   - loser: the slot another replica claimed and is running: refused,
//     already_executing.
//   - overlap: a fresh slot while the previous slot's run still holds the
//     lease: refused, already_executing, and recorded: the slot row is
//     written as skipped with a skip run row naming the holder.
//   - late: a slot another replica already completed: refused, completed.
//   - paused: a fresh slot of a paused job: refused, paused, and settled:
//     the slot row is written as skipped (no run row).
func benchSlotClaim(b *testing.B, open func(b *testing.B) BenchBundle) {
	b.Run("won", func(b *testing.B) { benchWon(b, open(b), false) })
	// As won, the claim sent as a replica's timer sends it (WaitDue, on
	// the database clock; its slot due already, so it does not wait):
	// PostgreSQL sends it through claim_committed.
	b.Run("won-sent-ahead", func(b *testing.B) { benchWon(b, open(b), true) })
	b.Run("loser", func(b *testing.B) {
		bb := open(b)
		s, trips := bb.Store, bb.Counter
		if _, err := benchClaim(b.Context(), s, rivalOwner, 0); err != nil {
			b.Fatal(err)
		}
		Measure(b, trips, BenchCall{
			Call: func(ctx context.Context, _ int) error {
				return benchClaimRefused(ctx, s, benchOwner, 0, store.ClaimHeld)
			},
		})
	})
	b.Run("overlap", func(b *testing.B) {
		bb := open(b)
		s, trips := bb.Store, bb.Counter
		rival, err := benchClaim(b.Context(), s, rivalOwner, 0)
		if err != nil {
			b.Fatal(err)
		}
		Measure(b, trips, BenchCall{
			Call: func(ctx context.Context, i int) error {
				// A fresh slot per call: an overlapped slot is recorded
				// as skipped, and a second claim of it would be refused
				// as skipped instead. Each comes due after the rival took
				// the lease (a slot due before that would be a late claim,
				// buffered), and before now.
				return benchClaimOverlapped(ctx, s, benchOwner, rival.Lease.AcquiredAt.Add(time.Duration(i+1)*time.Microsecond))
			},
		})
	})
	b.Run("late", func(b *testing.B) {
		bb := open(b)
		s, trips := bb.Store, bb.Counter
		c, err := benchClaim(b.Context(), s, rivalOwner, 0)
		if err != nil {
			b.Fatal(err)
		}
		if err := benchFinish(b.Context(), s, c); err != nil {
			b.Fatal(err)
		}
		Measure(b, trips, BenchCall{
			Call: func(ctx context.Context, _ int) error {
				return benchClaimRefused(ctx, s, benchOwner, 0, store.ClaimCompleted)
			},
		})
	})
	b.Run("paused", func(b *testing.B) {
		bb := open(b)
		s, trips := bb.Store, bb.Counter
		off := false
		if _, err := s.JobStateSet(b.Context(), store.JobStateSetParams{Job: benchJob, Enabled: &off, By: "bench"}); err != nil {
			b.Fatal(err)
		}
		Measure(b, trips, BenchCall{
			Call: func(ctx context.Context, i int) error {
				// A fresh slot per call, so each one is settled.
				return benchClaimRefused(ctx, s, benchOwner, i, store.ClaimPaused)
			},
		})
	})
}

// benchSlotFinish completes a claimed slot: slot marked, lease released
// and run row written. Each call finishes a fresh claim made before it.
func benchSlotFinish(b *testing.B, bb BenchBundle) {
	s, trips := bb.Store, bb.Counter
	var claimed store.SlotClaimResult
	Measure(b, trips, BenchCall{
		Before: func(ctx context.Context, i int) (err error) {
			claimed, err = benchClaim(ctx, s, benchOwner, i)
			return err
		},
		Call: func(ctx context.Context, _ int) error {
			return benchFinish(ctx, s, claimed)
		},
	})
}

// benchBatchJobs is how many jobs a batch benchmark claims each call:
// what one replica claims at once for a busy instant (the scheduler sends
// at most 1,000 items a statement).
const benchBatchJobs = 1000

// benchFinishBatch is how many runs' ends one finish batch carries: the
// scheduler's group commit sends at most 500.
const benchFinishBatch = 500

// benchBatchItems are the claims of benchBatchJobs jobs' slot i.
func benchBatchItems(i int) []store.SlotClaimParams {
	items := make([]store.SlotClaimParams, benchBatchJobs)
	for j := range items {
		job := fmt.Sprintf("batch-%04d", j)
		items[j] = store.SlotClaimParams{Job: job, Slot: benchSlotAt(i), LeaseName: "job:" + job, Owner: benchOwner,
			TTL: benchTTL, MaxAttempts: benchMaxAttempts}
	}
	return items
}

// benchClaimBatch measures SlotClaimBatch of benchBatchJobs slots due at
// one instant, each job's lease free (the runs of its previous slot
// ended): every item must be claimed. The history grows by that many
// slots and runs a call, as a busy replica's does.
func benchClaimBatch(b *testing.B, bb BenchBundle) {
	s := bb.Store
	var claimed []store.SlotClaimResult
	Measure(b, bb.Counter, BenchCall{
		Call: func(ctx context.Context, i int) (err error) {
			claimed, err = s.SlotClaimBatch(ctx, benchBatchItems(i))
			if err != nil {
				return err
			}
			for j, r := range claimed {
				if !r.Claimed {
					return fmt.Errorf("item %d not claimed: %s", j, r.Refusal)
				}
			}
			return nil
		},
		After: func(ctx context.Context, _ int) error { return benchFinishAll(ctx, s, claimed) },
	})
	b.ReportMetric(float64(benchBatchJobs), "items/op")
}

// benchFinishBatchOp measures SlotFinishBatch of benchFinishBatch runs
// that ended (completed, three log lines each).
func benchFinishBatchOp(b *testing.B, bb BenchBundle) {
	s := bb.Store
	var claimed []store.SlotClaimResult
	Measure(b, bb.Counter, BenchCall{
		Before: func(ctx context.Context, i int) (err error) {
			claimed, err = s.SlotClaimBatch(ctx, benchBatchItems(i)[:benchFinishBatch])
			return err
		},
		Call: func(ctx context.Context, _ int) error { return benchFinishAll(ctx, s, claimed) },
	})
	b.ReportMetric(float64(benchFinishBatch), "items/op")
}

// benchFinishAll ends every claimed run in finish batches of at most
// benchFinishBatch; each must complete its slot.
func benchFinishAll(ctx context.Context, s store.Store, claimed []store.SlotClaimResult) error {
	for chunk := range slices.Chunk(claimed, benchFinishBatch) {
		items := make([]store.SlotFinishParams, len(chunk))
		for j, r := range chunk {
			items[j] = store.SlotFinishParams{Job: r.Slot.Job, Slot: r.Slot.Slot, LeaseName: r.Lease.Name, Owner: r.Lease.Owner,
				Generation: r.Lease.Generation, Status: store.SlotCompleted,
				Run: store.Run{Attempt: r.Slot.Attempts, Success: true, StartedAt: r.Lease.AcquiredAt, Logs: []string{"one", "two", "three"}}}
		}
		res, err := s.SlotFinishBatch(ctx, items)
		if err != nil {
			return err
		}
		for j, r := range res {
			if r.SlotStatus != store.SlotCompleted {
				return fmt.Errorf("finish of item %d (%s): slot %q", j, items[j].Job, r.SlotStatus)
			}
		}
	}
	return nil
}

// MeasurePrune prunes s of what is older than before, as the scheduler
// does, checks that it deleted want slots and want runs, and reports how
// long the prune took (prune-s) and its longest step (longest-tx-s: the
// longest any one transaction of it held its rows' locks, on SQLite the
// database's only writer). The store's benchmarks write the history.
func MeasurePrune(b *testing.B, s store.Store, before time.Time, want int64) {
	b.Helper()
	b.StartTimer()
	start := time.Now()
	longest, last := time.Duration(0), start
	res, err := s.Prune(b.Context(), store.PruneParams{Before: before, AfterStep: func(store.PruneResult) error {
		longest, last = max(longest, time.Since(last)), time.Now()
		return nil
	}})
	took := time.Since(start)
	longest = max(longest, time.Since(last)) // a prune of one transaction calls no AfterStep
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if res.Slots != want || res.Runs != want {
		b.Fatalf("Prune = %+v, want %d of each", res, want)
	}
	b.ReportMetric(took.Seconds(), "prune-s")
	b.ReportMetric(longest.Seconds(), "longest-tx-s")
}
