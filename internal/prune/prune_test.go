package prune_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/internal/mytest"
	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/internal/prune"
	"github.com/cronfence/cronfence/internal/service"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/mysql"
	"github.com/cronfence/cronfence/store/postgres"
	"github.com/cronfence/cronfence/store/sqlite"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// stores open one fresh, migrated store of each database for t, its
// clock pinned to now.
var stores = []struct {
	name string
	open func(t *testing.T, now func() time.Time) store.Store
}{
	{"postgres", func(t *testing.T, now func() time.Time) store.Store {
		pool, schema := pgtest.Schema(t)
		s, err := postgres.New(pool, &postgres.Config{Schema: schema, NowFunc: now})
		if err != nil {
			t.Fatal(err)
		}
		return migrated(t, s)
	}},
	{"mysql", func(t *testing.T, now func() time.Time) store.Store {
		s, err := mysql.Open(context.Background(), mytest.Database(t), &mysql.Config{NowFunc: now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return migrated(t, s)
	}},
	{"sqlite", func(t *testing.T, now func() time.Time) store.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cronfence.db"), &sqlite.Config{NowFunc: now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return migrated(t, s)
	}},
}

func migrated[S interface {
	store.Store
	Migrate(context.Context) error
}](t *testing.T, s S) store.Store {
	t.Helper()
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// eachStore runs test once per store, in parallel, on a fake clock that is
// also the database's.
func eachStore(t *testing.T, test func(t *testing.T, db *clock.Fake, st store.Store)) {
	t.Parallel()
	for _, o := range stores {
		t.Run(o.name, func(t *testing.T) {
			t.Parallel()
			db := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			test(t, db, o.open(t, db.Now))
		})
	}
}

// steered is a store whose Prune and LeaseRenew the test steers: each
// hook, when set, is called in the store's stead.
type steered struct {
	store.Store
	prune func(ctx context.Context, p store.PruneParams) (store.PruneResult, error)
	renew func(ctx context.Context, p store.LeaseRenewParams) (store.Lease, error)
}

func (s *steered) Prune(ctx context.Context, p store.PruneParams) (store.PruneResult, error) {
	if s.prune != nil {
		return s.prune(ctx, p)
	}
	return s.Store.Prune(ctx, p)
}

func (s *steered) LeaseRenew(ctx context.Context, p store.LeaseRenewParams) (store.Lease, error) {
	if s.renew != nil {
		return s.renew(ctx, p)
	}
	return s.Store.LeaseRenew(ctx, p)
}

// newPruner is a replica's pruner on st, with a week's retention.
func newPruner(st store.Store, db *clock.Fake) *prune.Pruner {
	return &prune.Pruner{Base: &service.Base{
		Store: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: db, Now: db.Now, Owner: "a",
		StoreTimeout: 10 * time.Second, LiveKey: new(atomic.Int64), Failures: new(service.Failures), Busy: new(atomic.Int64),
	}, Retention: 7 * 24 * time.Hour, Every: time.Hour, Timers: true}
}

// writeDailyHistory writes ten days of a daily job's history: a slot and
// a run each day at noon, the last a day before now.
func writeDailyHistory(t *testing.T, st store.Store, now time.Time) {
	t.Helper()
	for age := 10; age >= 1; age-- {
		at := now.Add(-time.Duration(age)*24*time.Hour + 12*time.Hour)
		r, err := st.SlotClaim(context.Background(), store.SlotClaimParams{
			Job: "daily", Slot: at, LeaseName: "job:daily", Owner: "old", TTL: time.Minute, MaxAttempts: 1, Now: at,
		})
		if err != nil || !r.Claimed {
			t.Fatal(r, err)
		}
		if _, err := st.SlotFinish(context.Background(), store.SlotFinishParams{
			Job: "daily", Slot: at, LeaseName: r.Lease.Name, Owner: "old", Generation: r.Lease.Generation,
			Status: store.SlotCompleted, Now: at, Run: store.Run{Success: true, StartedAt: at},
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// pruneSteps is what smallPruneSteps saw: the steps of its prunes, the
// renewals of the retention lease, and the last prune's result.
type pruneSteps struct {
	mu              sync.Mutex
	steps, renewals int
	result          store.PruneResult
}

// smallPruneSteps is st whose Prune deletes two rows of each table a step,
// counting its steps and the renewals of the retention lease; with lost,
// every renewal of it fails as lost.
func smallPruneSteps(st store.Store, lost bool) (*steered, *pruneSteps) {
	ps := &pruneSteps{}
	s := &steered{Store: st}
	s.prune = func(ctx context.Context, params store.PruneParams) (store.PruneResult, error) {
		params.Batch = 2
		afterStep := params.AfterStep
		params.AfterStep = func(total store.PruneResult) error {
			ps.mu.Lock()
			ps.steps++
			ps.mu.Unlock()
			if afterStep == nil {
				return nil
			}
			return afterStep(total)
		}
		res, err := st.Prune(ctx, params)
		ps.mu.Lock()
		ps.result = res
		ps.mu.Unlock()
		return res, err
	}
	s.renew = func(ctx context.Context, params store.LeaseRenewParams) (store.Lease, error) {
		if params.Name == prune.LeaseName {
			ps.mu.Lock()
			ps.renewals++
			ps.mu.Unlock()
			if lost {
				return store.Lease{}, store.ErrLeaseLost
			}
		}
		return st.LeaseRenew(ctx, params)
	}
	return s, ps
}

// pruneTenDays writes ten days of a daily job's history and prunes it
// once, with a week's retention.
func pruneTenDays(t *testing.T, db *clock.Fake, st store.Store, through store.Store) {
	t.Helper()
	writeDailyHistory(t, st, db.Now())
	p := newPruner(through, db)
	p.Tick(context.Background(), db.Now())
	p.Stop()
}

// A prune deletes in steps and renews its lease after each, so it goes on
// for as long as the history needs, one replica at a time: ten days of a
// daily job with a week's retention is three slots and three runs to
// delete, two steps of two.
func TestAPruneRenewsItsLeaseAtEveryStep(t *testing.T) {
	eachStore(t, func(t *testing.T, db *clock.Fake, st store.Store) {
		small, ps := smallPruneSteps(st, false)
		pruneTenDays(t, db, st, small)
		ps.mu.Lock()
		defer ps.mu.Unlock()
		if want := (store.PruneResult{Slots: 3, Runs: 3}); ps.result != want {
			t.Fatalf("pruned %+v, want %+v", ps.result, want)
		}
		if ps.steps != 2 || ps.renewals != 2 {
			t.Fatalf("%d steps and %d renewals of the retention lease; want 2 steps, each followed by a renewal", ps.steps, ps.renewals)
		}
	})
}

// A prune whose lease was lost stops after the step it was in: another
// replica may be pruning now. What that step deleted stays deleted.
func TestAPruneStopsWhenItsLeaseIsLost(t *testing.T) {
	eachStore(t, func(t *testing.T, db *clock.Fake, st store.Store) {
		small, ps := smallPruneSteps(st, true)
		pruneTenDays(t, db, st, small)
		ps.mu.Lock()
		defer ps.mu.Unlock()
		if want := (store.PruneResult{Slots: 2, Runs: 2}); ps.result != want || ps.steps != 1 {
			t.Fatalf("pruned %+v in %d steps; want %+v, the first step's, and no step after the lease was lost", ps.result, ps.steps, want)
		}
		runs, err := st.RunList(context.Background(), store.RunListParams{Job: "daily"})
		if err != nil || len(runs) != 8 {
			t.Fatalf("%d runs left (%v), want the 8 the first step left", len(runs), err)
		}
	})
}

// A prune step that does not end is cancelled prune.StepTimeout after the
// lease was last renewed, a minute before the retention lease would
// expire, so no other replica starts pruning beside it; and the lease is
// given back.
func TestAPruneStepThatDoesNotEndIsCancelledBeforeItsLeaseExpires(t *testing.T) {
	eachStore(t, func(t *testing.T, db *clock.Fake, st store.Store) {
		// The store's prune never ends a step by itself (a database that
		// stopped answering, a lock never granted): it waits for its
		// context, and tells why that ended.
		entered, causes := make(chan struct{}), make(chan error, 1)
		hanging := &steered{Store: st, prune: func(ctx context.Context, _ store.PruneParams) (store.PruneResult, error) {
			close(entered)
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return store.PruneResult{}, ctx.Err()
		}}
		p := newPruner(hanging, db)
		p.Tick(context.Background(), db.Now())
		<-entered
		db.Advance(prune.StepTimeout - time.Second)
		select {
		case cause := <-causes:
			t.Fatalf("the prune step was cancelled %s before its timeout: %v", time.Second, cause)
		default:
		}
		db.Advance(time.Second)
		select {
		case cause := <-causes:
			if !errors.Is(cause, prune.ErrStepTimeout) {
				t.Fatalf("the prune step ended for %v; want prune.ErrStepTimeout", cause)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the prune step was not cancelled %s after it started", prune.StepTimeout)
		}
		p.Stop()
		l, err := st.LeaseGet(context.Background(), prune.LeaseName)
		if err != nil {
			t.Fatal(err)
		}
		if now := db.Now(); l.ExpiresAt.After(now) {
			t.Fatalf("the retention lease = %+v, held until after now (%s); want it given back", l, now)
		}
	})
}
