package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// contenders is how many goroutines race, each on its own Store (its own
// connections), as that many replicas would.
const contenders = 32

var raceTests = []namedTest{
	{name: "AcquireOneWinnerPerGeneration", serial: true, fn: raceAcquire},
	{name: "ClaimOneWinnerPerSlot", serial: true, fn: raceClaim},
	{name: "OverlapSkipRecordedOnce", serial: true, fn: raceOverlapSkip},
	{name: "CatchUpBesideTheNextSlot", serial: true, fn: raceCatchUpBesideNext},
	{name: "PruneBesideClaims", serial: true, fn: racePruneBesideClaims},
}

// racePruneBesideClaims: a prune deletes a job's old history in small steps
// while replicas go on claiming and finishing new slots of the same jobs.
// Neither makes the other fail (a deadlock, a lock wait past its bound),
// every claim wins, and what is left is the new history alone once a
// second prune has deleted what the first had to keep (each job's newest
// old slot and run, while no new one had landed yet).
func racePruneBesideClaims(t *testing.T, b Bundle) {
	now := dbNow(t, b.Store)
	cutoff := now.Add(-time.Hour)
	jobs := []string{"a", "b", "c", "d"}
	const each = 20
	for _, job := range jobs {
		for i := each; i > 0; i-- { // old: a minute apart, up to the cutoff
			slot := cutoff.Add(-time.Duration(i) * time.Minute)
			r := mustClaim(t, b.Store, store.SlotClaimParams{Job: job, Slot: slot, LeaseName: "job:" + job, Owner: "old", TTL: ttl, MaxAttempts: 1, Now: slot})
			mustFinish(t, b.Store, finishParams(r, store.SlotCompleted, slot))
		}
	}
	stores := make([]store.Store, len(jobs)+1) // a claimer per job, and the pruner
	for i := range stores {
		stores[i] = b.Open(t)
	}
	errs := race(stores, func(i int, s store.Store) error {
		if i == len(jobs) {
			_, err := s.Prune(ctx(t), store.PruneParams{Before: cutoff, Batch: 3})
			return err
		}
		for n := range each { // new: a minute apart, from the cutoff on
			slot := cutoff.Add(time.Duration(n+1) * time.Minute)
			r, err := s.SlotClaim(ctx(t), store.SlotClaimParams{Job: jobs[i], Slot: slot, LeaseName: "job:" + jobs[i], Owner: "new", TTL: ttl, MaxAttempts: 1, Now: slot})
			if err != nil {
				return err
			}
			if !r.Claimed {
				return fmt.Errorf("%s's slot %s refused beside a prune: %+v", jobs[i], slot.Format(time.TimeOnly), r)
			}
			if _, err := s.SlotFinish(ctx(t), finishParams(r, store.SlotCompleted, slot)); err != nil {
				return err
			}
		}
		return nil
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("contender %d (%d is the prune): %v", i, len(jobs), err)
		}
	}
	if _, err := b.Store.Prune(ctx(t), store.PruneParams{Before: cutoff}); err != nil {
		t.Fatal(err)
	}
	for _, job := range jobs {
		runs, err := b.Store.RunList(ctx(t), store.RunListParams{Job: job})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != each {
			t.Fatalf("%s has %d runs after the prunes, want its %d new ones", job, len(runs), each)
		}
		for _, r := range runs {
			if r.StartedAt.Before(cutoff) {
				t.Fatalf("%s's run of %s outlived the prunes", job, r.StartedAt)
			}
		}
		if _, err := b.Store.SlotGet(ctx(t), job, cutoff.Add(-time.Minute)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s's newest old slot outlived the prunes: %v", job, err)
		}
	}
}

// raceCatchUpBesideNext: the store comes back after an outage, and every
// replica claims, at once, the slot it missed (a catch-up) and the slot due
// now, both of one job. Whichever claim takes the lease, the other slot came
// due before that holder took it: no overlap, so it is buffered, once, and
// no skip row is written.
func raceCatchUpBesideNext(t *testing.T, b Bundle) {
	stores := openContenders(t, b)
	now := dbNow(t, b.Store)
	missed, next := now.Add(-time.Minute), now.Add(-time.Second)
	type result struct {
		r   store.SlotClaimResult
		err error
	}
	results := race(stores, func(i int, s store.Store) result {
		p := claimParams(next, fmt.Sprintf("replica-%02d", i), now)
		if i%2 == 0 {
			p.Slot, p.CatchUp = missed, true
		}
		r, err := s.SlotClaim(ctx(t), p)
		return result{r, err}
	})
	claimed, buffered := 0, 0
	for i, res := range results {
		switch {
		case res.err != nil:
			t.Fatalf("contender %d: %v", i, res.err)
		case res.r.Claimed:
			claimed++
		case res.r.Recorded == store.SlotBuffered:
			buffered++
		case res.r.Recorded != "":
			t.Fatalf("contender %d recorded %q: %+v", i, res.r.Recorded, res.r)
		}
	}
	if claimed != 1 || buffered != 1 {
		t.Fatalf("%d claims won and %d buffered the other slot; want 1 and 1", claimed, buffered)
	}
	runs, err := b.Store.RunList(ctx(t), store.RunListParams{Job: "report"})
	if err != nil || len(runs) != 0 {
		t.Fatalf("run rows = %+v, %v; want no skip", runs, err)
	}
	for _, slot := range []time.Time{missed, next} {
		if got := mustGetSlotOf(t, b.Store, "report", slot); got.Status != store.SlotRunning && got.Status != store.SlotBuffered {
			t.Fatalf("slot %s = %+v; want one running, one buffered", slot, got)
		}
	}
}

func openContenders(t *testing.T, b Bundle) []store.Store {
	stores := make([]store.Store, contenders)
	for i := range stores {
		stores[i] = b.Open(t)
	}
	return stores
}

// race runs fn once per contender, released together, and returns what each
// returned.
func race[T any](stores []store.Store, fn func(i int, s store.Store) T) []T {
	out := make([]T, len(stores))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			<-start
			out[i] = fn(i, s)
		})
	}
	close(start)
	wg.Wait()
	return out
}

func raceAcquire(t *testing.T, b Bundle) {
	stores := openContenders(t, b)
	base := dbNow(t, b.Store)
	const rounds = 40
	var last int64
	for round := 0; round < rounds; round++ {
		// Each round happens one TTL after the last, so the previous
		// winner's lease has expired and everyone may contend.
		now := base.Add(time.Duration(round) * ttl)
		type result struct {
			lease store.Lease
			ok    bool
			err   error
		}
		results := race(stores, func(i int, s store.Store) result {
			l, ok, err := s.LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: "contended", Owner: fmt.Sprintf("replica-%02d", i), TTL: ttl, Now: now})
			return result{l, ok, err}
		})
		winners := 0
		for i, r := range results {
			if r.err != nil {
				t.Fatalf("round %d, contender %d: %v", round, i, r.err)
			}
			if r.ok {
				winners++
				if r.lease.Generation != last+1 {
					t.Fatalf("round %d: winner got generation %d after %d", round, r.lease.Generation, last)
				}
				last = r.lease.Generation
			}
		}
		if winners != 1 {
			t.Fatalf("round %d: %d winners, want exactly 1", round, winners)
		}
	}
	if last != rounds {
		t.Fatalf("after %d rounds the generation is %d", rounds, last)
	}
}

func raceClaim(t *testing.T, b Bundle) {
	stores := openContenders(t, b)
	base := dbNow(t, b.Store)
	const slots = 25
	var last int64
	for n := 0; n < slots; n++ {
		slot := base.Add(time.Duration(n) * time.Minute)
		type result struct {
			r   store.SlotClaimResult
			err error
		}
		claim := func(i int, s store.Store) result {
			r, err := s.SlotClaim(ctx(t), store.SlotClaimParams{
				Job: "every-minute", Slot: slot, LeaseName: "job:every-minute", Owner: fmt.Sprintf("replica-%02d", i),
				TTL: ttl, MaxAttempts: 3, Now: slot,
			})
			return result{r, err}
		}
		results := race(stores, claim)
		var winner *store.SlotClaimResult
		for i, res := range results {
			if res.err != nil {
				t.Fatalf("slot %d, contender %d: %v", n, i, res.err)
			}
			if res.r.Claimed {
				if winner != nil {
					t.Fatalf("slot %d claimed twice: by %s and %s", n, winner.Slot.Owner, res.r.Slot.Owner)
				}
				winner = &results[i].r
			} else if res.r.Refusal != store.ClaimHeld {
				t.Fatalf("slot %d, contender %d refused with %q, want %q", n, i, res.r.Refusal, store.ClaimHeld)
			}
		}
		if winner == nil {
			t.Fatalf("slot %d: nobody claimed it", n)
		}
		if winner.Lease.Generation <= last || winner.Slot.Generation != winner.Lease.Generation {
			t.Fatalf("slot %d: generation %d after %d (slot records %d)", n, winner.Lease.Generation, last, winner.Slot.Generation)
		}
		last = winner.Lease.Generation
		mustFinish(t, b.Store, finishParams(*winner, store.SlotCompleted, slot.Add(time.Second)))

		// Replicas whose timers fire late find the slot done: the failure
		// of designs that release a lock at the end of a fast run.
		for i, res := range race(stores, func(i int, s store.Store) result {
			r, err := s.SlotClaim(ctx(t), store.SlotClaimParams{
				Job: "every-minute", Slot: slot, LeaseName: "job:every-minute", Owner: fmt.Sprintf("late-%02d", i),
				TTL: ttl, MaxAttempts: 3, Now: slot.Add(2 * time.Second),
			})
			return result{r, err}
		}) {
			if res.err != nil || res.r.Claimed || res.r.Refusal != store.ClaimCompleted {
				t.Fatalf("slot %d, late contender %d: claimed %v, refusal %q, err %v; want refused as completed", n, i, res.r.Claimed, res.r.Refusal, res.err)
			}
		}
	}
	// Late contenders never spent a generation.
	if l, err := b.Store.LeaseGet(ctx(t), "job:every-minute"); err != nil || l.Generation != last {
		t.Fatalf("lease after the race = %+v, %v; want generation %d", l, err, last)
	}
}
