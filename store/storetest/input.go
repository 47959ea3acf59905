package storetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

var inputTests = []namedTest{
	{name: "BadInputRejectedWithoutWriting", fn: badInput},
	{name: "Closed", fn: closedStore},
}

func badInput(t *testing.T, b Bundle) {
	s := b.Store
	long := strings.Repeat("n", store.MaxNameLength+1)
	now := time.Now()
	good := store.SlotClaimParams{Job: "j", Slot: now.Add(-time.Hour), LeaseName: "l", Owner: "o", TTL: ttl, MaxAttempts: 1}
	claim := func(mut func(*store.SlotClaimParams)) error {
		p := good
		mut(&p)
		_, err := s.SlotClaim(ctx(t), p)
		return err
	}
	acquire := func(name, owner string, ttl time.Duration) error {
		_, _, err := s.LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: name, Owner: owner, TTL: ttl})
		return err
	}
	ref := store.LeaseRef{Name: "l", Owner: "o", Generation: 1}
	for _, tc := range []struct {
		name string
		err  error
		// mention is a word the message must contain, naming what is wrong.
		mention string
	}{
		{"empty lease name", acquire("", "o", ttl), "lease name"},
		{"over-long lease name", acquire(long, "o", ttl), "at most"},
		{"NUL in lease name", acquire("a\x00b", "o", ttl), "NUL"},
		{"invalid UTF-8 name", acquire("a\xffb", "o", ttl), "UTF-8"},
		{"empty owner", acquire("l", "", ttl), "owner"},
		{"zero TTL", acquire("l", "o", 0), "TTL"},
		{"negative TTL", acquire("l", "o", -time.Second), "TTL"},
		{"huge TTL", acquire("l", "o", 10*365*24*time.Hour), "TTL"},
		{"renew generation 0", func() error {
			_, err := s.LeaseRenew(ctx(t), store.LeaseRenewParams{LeaseRef: store.LeaseRef{Name: "l", Owner: "o"}, TTL: ttl})
			return err
		}(), "generation"},
		{"renew zero TTL", func() error {
			_, err := s.LeaseRenew(ctx(t), store.LeaseRenewParams{LeaseRef: ref})
			return err
		}(), "TTL"},
		{"release empty name", func() error {
			_, err := s.LeaseRelease(ctx(t), store.LeaseRef{Owner: "o", Generation: 1})
			return err
		}(), "lease name"},
		{"get empty name", func() error { _, err := s.LeaseGet(ctx(t), ""); return err }(), "lease name"},
		{"fence generation 0", s.LeaseFence(ctx(t), nil, "l", 0), "generation"},
		{"claim empty job", claim(func(p *store.SlotClaimParams) { p.Job = "" }), "job"},
		{"claim zero slot", claim(func(p *store.SlotClaimParams) { p.Slot = time.Time{} }), "slot"},
		{"claim zero max attempts", claim(func(p *store.SlotClaimParams) { p.MaxAttempts = 0 }), "MaxAttempts"},
		{"claim zero TTL", claim(func(p *store.SlotClaimParams) { p.TTL = 0 }), "TTL"},
		{"claim negative RetryOf", claim(func(p *store.SlotClaimParams) { p.RetryFailed, p.RetryOf = true, -1 }), "RetryOf"},
		{"claim RetryOf without RetryFailed", claim(func(p *store.SlotClaimParams) { p.RetryOf = 1 }), "RetryOf"},
		{"finish RetryUntil of a completed slot", func() error {
			_, err := s.SlotFinish(ctx(t), store.SlotFinishParams{Job: "j", Slot: now, LeaseName: "l", Owner: "o", Generation: 1,
				Status: store.SlotCompleted, RetryUntil: now.Add(time.Hour)})
			return err
		}(), "RetryUntil"},
		{"claim over-long lease name", claim(func(p *store.SlotClaimParams) { p.LeaseName = long }), "lease name"},
		{"finish bad status", func() error {
			_, err := s.SlotFinish(ctx(t), store.SlotFinishParams{Job: "j", Slot: now, LeaseName: "l", Owner: "o", Generation: 1, Status: store.SlotSkipped})
			return err
		}(), "status"},
		{"run without job", func() error { _, err := s.RunInsert(ctx(t), store.Run{}); return err }(), "job"},
		{"run finished before start", func() error {
			_, err := s.RunInsert(ctx(t), store.Run{Job: "j", StartedAt: now, FinishedAt: now.Add(-time.Second)})
			return err
		}(), "before"},
		{"list negative limit", func() error { _, err := s.RunList(ctx(t), store.RunListParams{Limit: -1}); return err }(), "limit"},
		{"list huge limit", func() error {
			_, err := s.RunList(ctx(t), store.RunListParams{Limit: store.MaxRunListLimit + 1})
			return err
		}(), "limit"},
		{"prune without cutoff", func() error { _, err := s.Prune(ctx(t), store.PruneParams{}); return err }(), "cutoff"},
		{"prune negative batch", func() error { _, err := s.Prune(ctx(t), store.PruneParams{Before: now, Batch: -1}); return err }(), "batch"},
		{"prune huge batch", func() error {
			_, err := s.Prune(ctx(t), store.PruneParams{Before: now, Batch: store.MaxPruneBatch + 1})
			return err
		}(), "batch"},
	} {
		if !errors.Is(tc.err, store.ErrInvalidArgument) {
			t.Errorf("%s: error = %v, want one wrapping ErrInvalidArgument", tc.name, tc.err)
			continue
		}
		if !strings.Contains(tc.err.Error(), tc.mention) {
			t.Errorf("%s: error %q does not say what is wrong (%q)", tc.name, tc.err, tc.mention)
		}
	}
	for _, name := range []string{"l", ""} {
		if name == "" {
			continue
		}
		wantNotFoundLease(t, s, name)
	}
	if runs, err := s.RunList(ctx(t), store.RunListParams{}); err != nil || len(runs) != 0 {
		t.Fatalf("bad input left %d runs (%v)", len(runs), err)
	}
	if _, err := s.SlotGet(ctx(t), "j", good.Slot); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("bad input left a slot: %v", err)
	}
}

func closedStore(t *testing.T, b Bundle) {
	s := b.Open(t)
	l := mustAcquire(t, s, store.LeaseAcquireParams{Name: "x", Owner: "a", TTL: ttl})
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	now := time.Now()
	calls := map[string]error{
		"Migrate": s.Migrate(ctx(t)),
		"Now":     func() error { _, err := s.Now(ctx(t)); return err }(),
		"LeaseAcquire": func() error {
			_, _, err := s.LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: "y", Owner: "a", TTL: ttl})
			return err
		}(),
		"LeaseRenew": func() error {
			_, err := s.LeaseRenew(ctx(t), store.LeaseRenewParams{LeaseRef: l.Ref(), TTL: ttl})
			return err
		}(),
		"LeaseRelease": func() error { _, err := s.LeaseRelease(ctx(t), l.Ref()); return err }(),
		"LeaseGet":     func() error { _, err := s.LeaseGet(ctx(t), "x"); return err }(),
		"SlotClaim": func() error {
			_, err := s.SlotClaim(ctx(t), store.SlotClaimParams{Job: "j", Slot: now, LeaseName: "l", Owner: "o", TTL: ttl, MaxAttempts: 1})
			return err
		}(),
		"SlotGet": func() error { _, err := s.SlotGet(ctx(t), "j", now); return err }(),
		"SlotListInterrupted": func() error {
			_, err := s.SlotListInterrupted(ctx(t))
			return err
		}(),
		"SlotAbandon": func() error {
			_, err := s.SlotAbandon(ctx(t), store.SlotAbandonParams{Job: "j", Slot: now, LeaseName: "l", Owner: "o", Generation: 1, MaxAttempts: 1})
			return err
		}(),
		"RunInterrupted": func() error {
			_, err := s.RunInterrupted(ctx(t), []store.RunInterruptedParams{{Job: "j", Slot: now, LeaseName: "l", Owner: "o", Generation: 1}})
			return err
		}(),
		"RunInsert": func() error { _, err := s.RunInsert(ctx(t), store.Run{Job: "j"}); return err }(),
		"RunList":   func() error { _, err := s.RunList(ctx(t), store.RunListParams{}); return err }(),
		"Prune":     func() error { _, err := s.Prune(ctx(t), store.PruneParams{Before: now}); return err }(),
		"SchemaVersion": func() error {
			_, _, err := s.SchemaVersion(ctx(t))
			return err
		}(),
	}
	for name, err := range calls {
		wantErrIs(t, name+" after Close", err, store.ErrClosed)
	}
	// The lease taken before Close is untouched: closing is not releasing.
	got, err := b.Store.LeaseGet(ctx(t), "x")
	if err != nil || got.Generation != l.Generation || !got.ExpiresAt.Equal(l.ExpiresAt) {
		t.Fatalf("after Close the lease is %+v, %v; want it as it was", got, err)
	}
}
