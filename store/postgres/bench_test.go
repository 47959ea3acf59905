package postgres_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
)

// The benchmarks below measure each store operation on its own path: the
// round trips it spends, counted at the driver, and the distribution of its
// latency. Run them with
//
//	go test -run '^$' -bench . ./store/postgres/
//
// Each one sets up, untimed and uncounted, the state its path needs, and
// checks after every call that the call took that path, so a figure cannot
// silently describe another one. Calls run one at a time on one pool, after
// a warm-up that opens the connection and prepares every statement on it:
// the figures are the steady state of a long-running replica.
//
// Metrics: roundtrips/op is counted by a pgx tracer on the pool; p50-µs,
// p90-µs, p99-µs and max-µs are percentiles (nearest rank) of the latency of
// the measured calls, timed one by one; connects/op appears only if a
// connection had to be opened during the measured calls.

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

// slotEpoch is the first slot instant. Slots are one a minute from here,
// long past by the database clock, so every claim is due.
var slotEpoch = time.Date(2020, time.January, 1, 0, 0, 0, 0, time.UTC)

func slotAt(i int) time.Time { return slotEpoch.Add(time.Duration(i) * time.Minute) }

// benchStore returns a migrated store in a fresh schema, on a pool of its
// own whose every round trip is counted by the returned tracer. The
// pool has pgtest's settings: its configuration is copied from the pool
// pgtest.Schema returns, which stays idle. It closes at cleanup, before
// pgtest drops the schema.
func benchStore(b *testing.B) (*postgres.Store, *pgtest.RoundTrips) {
	b.Helper()
	base, schema := pgtest.Schema(b)
	trips := &pgtest.RoundTrips{}
	cfg := base.Config() // a copy
	trips.Trace(cfg)
	pool, err := pgxpool.NewWithConfig(b.Context(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	s, err := postgres.New(pool, &postgres.Config{Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Migrate(b.Context()); err != nil {
		b.Fatal(err)
	}
	return s, trips
}

// benchCall is one measured store operation. Its i is the call's index,
// counted from the first warm-up call, for calls that need distinct slots.
type benchCall struct {
	// before puts the store in the state the call's path needs. It runs
	// before every call, untimed and uncounted. Optional.
	before func(ctx context.Context, i int) error
	// call is the measured operation. It returns an error when the
	// operation failed or did not take the benchmark's path.
	call func(ctx context.Context, i int) error
	// after runs after every call, like before. Optional.
	after func(ctx context.Context, i int) error
}

// measure runs c warmupCalls times, then once per b.Loop iteration, timing
// each call and counting its round trips, and reports the figures.
func measure(b *testing.B, trips *pgtest.RoundTrips, c benchCall) {
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
		untimed(i, c.before, "before")
		if err := c.call(ctx, i); err != nil {
			b.Fatalf("warm-up call %d: %v", i, err)
		}
		untimed(i, c.after, "after")
	}

	var (
		latencies        []time.Duration
		roundTrips, conn int64
	)
	for b.Loop() {
		untimed(i, c.before, "before")
		trips0, conn0 := trips.Total(), trips.Connects()
		start := time.Now()
		err := c.call(ctx, i)
		elapsed := time.Since(start)
		roundTrips += trips.Total() - trips0
		conn += trips.Connects() - conn0
		if err != nil {
			b.Fatalf("call %d: %v", i, err)
		}
		latencies = append(latencies, elapsed)
		untimed(i, c.after, "after")
		i++
	}

	n := float64(len(latencies))
	b.ReportMetric(float64(roundTrips)/n, "roundtrips/op")
	if conn > 0 {
		b.ReportMetric(float64(conn)/n, "connects/op")
	}
	slices.Sort(latencies)
	for _, p := range []struct {
		unit string
		q    float64
	}{{"p50-µs", 0.50}, {"p90-µs", 0.90}, {"p99-µs", 0.99}, {"max-µs", 1}} {
		b.ReportMetric(micros(percentile(latencies, p.q)), p.unit)
	}
}

// percentile returns the q-quantile of sorted by the nearest-rank method.
func percentile(sorted []time.Duration, q float64) time.Duration {
	rank := int(math.Ceil(q * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// acquire takes benchLease for owner; it must be free.
func acquire(ctx context.Context, s *postgres.Store, owner string) (store.Lease, error) {
	l, ok, err := s.LeaseAcquire(ctx, store.LeaseAcquireParams{Name: benchLease, Owner: owner, TTL: benchTTL})
	if err != nil {
		return store.Lease{}, err
	}
	if !ok {
		return store.Lease{}, fmt.Errorf("lease %q not acquired: held by %+v", benchLease, l)
	}
	return l, nil
}

// release gives held back; it must still be held.
func release(ctx context.Context, s *postgres.Store, held store.Lease) error {
	ok, err := s.LeaseRelease(ctx, held.Ref())
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("lease %+v was no longer held at release", held)
	}
	return nil
}

// claim claims slotAt(i) for owner; the claim must succeed.
func claim(ctx context.Context, s *postgres.Store, owner string, i int) (store.SlotClaimResult, error) {
	r, err := s.SlotClaim(ctx, claimParams(owner, i))
	if err != nil {
		return r, err
	}
	if !r.Claimed {
		return r, fmt.Errorf("slot %d not claimed: refused %q", i, r.Refusal)
	}
	return r, nil
}

// claimRefused claims slotAt(i) for owner; the claim must be refused with want.
func claimRefused(ctx context.Context, s *postgres.Store, owner string, i int, want store.ClaimRefusal) error {
	r, err := s.SlotClaim(ctx, claimParams(owner, i))
	if err != nil {
		return err
	}
	if r.Claimed || r.Refusal != want {
		return fmt.Errorf("slot %d: claimed %v, refusal %q; want refusal %q", i, r.Claimed, r.Refusal, want)
	}
	return nil
}

// claimOverlapped claims slotAt(i) for owner while another run holds the
// lease; the claim must be refused with already_executing and record the
// slot as skipped, with its skip run row.
func claimOverlapped(ctx context.Context, s *postgres.Store, owner string, slot time.Time) error {
	p := claimParams(owner, 0)
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

func claimParams(owner string, i int) store.SlotClaimParams {
	return store.SlotClaimParams{
		Job: benchJob, Slot: slotAt(i), LeaseName: benchLease, Owner: owner,
		TTL: benchTTL, MaxAttempts: benchMaxAttempts,
	}
}

// finish completes the claim c, as a successful run would: the slot
// completed, the lease released and a run row with a few log lines written.
func finish(ctx context.Context, s *postgres.Store, c store.SlotClaimResult) error {
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

// BenchmarkRoundTrip runs SELECT 1 through the pool: the floor under every
// operation below (acquiring a pooled connection, one exchange with the
// server, scanning one row), for reading their figures.
func BenchmarkRoundTrip(b *testing.B) {
	s, trips := benchStore(b)
	measure(b, trips, benchCall{
		call: func(ctx context.Context, _ int) error {
			var one int
			return s.Pool().QueryRow(ctx, `SELECT 1`).Scan(&one)
		},
	})
}

// BenchmarkLeaseAcquire takes a lease that exists and was released, as a job
// lease is between runs: the acquisition updates the row on conflict.
func BenchmarkLeaseAcquire(b *testing.B) {
	s, trips := benchStore(b)
	var held store.Lease
	measure(b, trips, benchCall{
		before: func(ctx context.Context, _ int) error {
			if held.Generation == 0 {
				return nil // the first call inserts the row
			}
			return release(ctx, s, held)
		},
		call: func(ctx context.Context, _ int) (err error) {
			held, err = acquire(ctx, s, benchOwner)
			return err
		},
	})
}

// BenchmarkLeaseRenew extends a held lease, as the lease keeper does every
// TTL/3.
func BenchmarkLeaseRenew(b *testing.B) {
	s, trips := benchStore(b)
	held, err := acquire(b.Context(), s, benchOwner)
	if err != nil {
		b.Fatal(err)
	}
	measure(b, trips, benchCall{
		call: func(ctx context.Context, _ int) error {
			_, err := s.LeaseRenew(ctx, store.LeaseRenewParams{LeaseRef: held.Ref(), TTL: benchTTL})
			return err
		},
	})
}

// BenchmarkLeaseRelease gives back a held lease.
func BenchmarkLeaseRelease(b *testing.B) {
	s, trips := benchStore(b)
	var held store.Lease
	measure(b, trips, benchCall{
		before: func(ctx context.Context, _ int) (err error) {
			held, err = acquire(ctx, s, benchOwner)
			return err
		},
		call: func(ctx context.Context, _ int) error {
			return release(ctx, s, held)
		},
	})
}

// BenchmarkLeaseFence fences a pgx transaction on a held lease. Only the
// fence's own statement is measured: the transaction begins before it and
// commits after it, untimed and uncounted.
func BenchmarkLeaseFence(b *testing.B) {
	s, trips := benchStore(b)
	held, err := acquire(b.Context(), s, benchOwner)
	if err != nil {
		b.Fatal(err)
	}
	var tx pgx.Tx
	defer func() {
		// A failed call leaves its transaction open, and the pool would wait
		// for its connection at cleanup.
		if tx != nil {
			_ = tx.Rollback(context.Background())
		}
	}()
	measure(b, trips, benchCall{
		before: func(ctx context.Context, _ int) (err error) {
			tx, err = s.Pool().Begin(ctx)
			return err
		},
		call: func(ctx context.Context, _ int) error {
			return s.LeaseFence(ctx, tx, held.Name, held.Generation)
		},
		after: func(ctx context.Context, _ int) error {
			err := tx.Commit(ctx)
			tx = nil
			return err
		},
	})
}

// BenchmarkSlotClaim claims slots on each path a replica meets when a slot
// falls due:
//
//   - won: a fresh slot, its lease free (the previous run finished): the
//     slot is claimed and the lease taken.
//   - loser: the slot another replica claimed and is running: refused,
//     already_executing.
//   - overlap: a fresh slot while the previous slot's run still holds the
//     lease: refused, already_executing, and recorded: the slot row is
//     written as skipped with a skip run row naming the holder.
//   - late: a slot another replica already completed: refused, completed.
//   - paused: a fresh slot of a paused job: refused, paused, and settled:
//     the slot row is written as skipped (no run row).
func BenchmarkSlotClaim(b *testing.B) {
	b.Run("won", func(b *testing.B) {
		s, trips := benchStore(b)
		var last store.SlotClaimResult
		measure(b, trips, benchCall{
			before: func(ctx context.Context, _ int) error {
				if !last.Claimed {
					return nil
				}
				return finish(ctx, s, last)
			},
			call: func(ctx context.Context, i int) (err error) {
				last, err = claim(ctx, s, benchOwner, i)
				return err
			},
		})
	})
	b.Run("loser", func(b *testing.B) {
		s, trips := benchStore(b)
		if _, err := claim(b.Context(), s, rivalOwner, 0); err != nil {
			b.Fatal(err)
		}
		measure(b, trips, benchCall{
			call: func(ctx context.Context, _ int) error {
				return claimRefused(ctx, s, benchOwner, 0, store.ClaimHeld)
			},
		})
	})
	b.Run("overlap", func(b *testing.B) {
		s, trips := benchStore(b)
		rival, err := claim(b.Context(), s, rivalOwner, 0)
		if err != nil {
			b.Fatal(err)
		}
		measure(b, trips, benchCall{
			call: func(ctx context.Context, i int) error {
				// A fresh slot per call: an overlapped slot is recorded
				// as skipped, and a second claim of it would be refused
				// as skipped instead. Each comes due after the rival took
				// the lease (a slot due before that would be a late claim,
				// buffered), and before now.
				return claimOverlapped(ctx, s, benchOwner, rival.Lease.AcquiredAt.Add(time.Duration(i+1)*time.Microsecond))
			},
		})
	})
	b.Run("late", func(b *testing.B) {
		s, trips := benchStore(b)
		c, err := claim(b.Context(), s, rivalOwner, 0)
		if err != nil {
			b.Fatal(err)
		}
		if err := finish(b.Context(), s, c); err != nil {
			b.Fatal(err)
		}
		measure(b, trips, benchCall{
			call: func(ctx context.Context, _ int) error {
				return claimRefused(ctx, s, benchOwner, 0, store.ClaimCompleted)
			},
		})
	})
	b.Run("paused", func(b *testing.B) {
		s, trips := benchStore(b)
		off := false
		if _, err := s.JobStateSet(b.Context(), store.JobStateSetParams{Job: benchJob, Enabled: &off, By: "bench"}); err != nil {
			b.Fatal(err)
		}
		measure(b, trips, benchCall{
			call: func(ctx context.Context, i int) error {
				// A fresh slot per call, so each one is settled.
				return claimRefused(ctx, s, benchOwner, i, store.ClaimPaused)
			},
		})
	})
}

// BenchmarkSlotFinish completes a claimed slot: slot marked, lease released
// and run row written. Each call finishes a fresh claim made before it.
func BenchmarkSlotFinish(b *testing.B) {
	s, trips := benchStore(b)
	var claimed store.SlotClaimResult
	measure(b, trips, benchCall{
		before: func(ctx context.Context, i int) (err error) {
			claimed, err = claim(ctx, s, benchOwner, i)
			return err
		},
		call: func(ctx context.Context, _ int) error {
			return finish(ctx, s, claimed)
		},
	})
}
