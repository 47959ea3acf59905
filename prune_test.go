package cronfence

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/prune"
	"github.com/cronfence/cronfence/store"
)

// heldPrune is a store whose Prune waits at a gate: a prune of a large
// history (an hour of thousands of runs a second is millions of rows).
type heldPrune struct {
	store.Store
	*gate
}

func (h *heldPrune) Prune(ctx context.Context, p store.PruneParams) (store.PruneResult, error) {
	h.pass()
	return h.Store.Prune(ctx, p)
}

// The replica that prunes goes on firing while the prune runs: it used to
// prune on its loop and fire nothing until the prune ended (up to
// StoreTimeout, every PruneEvery).
func TestAPruneDoesNotHoldUpTheLoop(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		st := &heldPrune{Store: c.open(t), gate: newGate()}
		start := c.db.Now()
		l := newLedger()
		s, err := New(Config{Store: st, Owner: "a", Logger: quiet, Clock: offsetClock{c.db, 0}, Retention: 24 * time.Hour,
			StoreTimeout: time.Hour}) // the held prune is not cut short: it ends when released
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Register(Job{Name: "secondly", Schedule: "* * * * * *", Handler: l.handler(c.db)}); err != nil {
			t.Fatal(err)
		}
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer func() {
			close(st.release)
			_ = s.Stop(context.Background())
		}()
		// The first tick comes at once, at 12:00:00 (the first resume pass
		// is due at start): it prunes.
		select {
		case <-st.entered:
		case <-time.After(30 * time.Second):
			t.Fatal("no prune started at the first tick")
		}
		// The clock moves only once the loop sleeps on its timer for
		// 12:00:01, beside the prune step's timeout (waitForTimers): moved
		// before, it left the slot waiting a second more, and the test
		// failed under -race.
		c.waitForTimers(2)
		c.db.Advance(time.Second) // fires 12:00:01
		slot := start.Add(time.Second)
		for deadline := time.Now().Add(30 * time.Second); l.ran("secondly", slot) == 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("secondly's slot %s did not run while the prune was under way", slot.Format(time.TimeOnly))
			}
		}
	})
}

// pruneDeadlines records how long each Prune was given to finish.
type pruneDeadlines struct {
	store.Store
	mu   sync.Mutex
	left []time.Duration // time.Until the context's deadline; -1 for none
}

func (p *pruneDeadlines) Prune(ctx context.Context, params store.PruneParams) (store.PruneResult, error) {
	left := time.Duration(-1)
	if dl, ok := ctx.Deadline(); ok {
		left = time.Until(dl)
	}
	p.mu.Lock()
	p.left = append(p.left, left)
	p.mu.Unlock()
	return p.Store.Prune(ctx, params)
}

// A prune is not cut off at StoreTimeout, which bounds the loop's round
// trips: it runs beside the loop, and an hour of a busy cluster's history
// takes longer (a million slots and runs took 19 s on PostgreSQL on a
// 2-core machine). Cut off, it was rolled back whole, hour after hour, and
// the history grew without bound. It now runs in steps for as long as it
// holds its lease (TestAPruneRenewsItsLeaseAtEveryStep), with no deadline.
func TestAPruneIsNotCutOffAtTheStoreTimeout(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		st := &pruneDeadlines{Store: c.open(t)}
		c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: 24 * time.Hour, Store: st, StoreTimeout: time.Second},
			Job{Name: "daily", Schedule: "@daily", Handler: nopHandler})
		c.advance(time.Second, time.Second) // the first tick prunes
		st.mu.Lock()
		defer st.mu.Unlock()
		if len(st.left) != 1 || st.left[0] != -1 {
			t.Fatalf("the prunes had %v to finish; want one, with no deadline (-1), not StoreTimeout's 1s", st.left)
		}
	})
}

// smallPruneSteps is a store whose Prune deletes two rows of each table a
// step, counting its steps and the renewals of the retention lease; with
// lost, every renewal of it fails as lost.
type smallPruneSteps struct {
	store.Store
	lost bool

	mu              sync.Mutex
	steps, renewals int
	result          store.PruneResult
}

func (p *smallPruneSteps) Prune(ctx context.Context, params store.PruneParams) (store.PruneResult, error) {
	params.Batch = 2
	afterStep := params.AfterStep
	params.AfterStep = func(total store.PruneResult) error {
		p.mu.Lock()
		p.steps++
		p.mu.Unlock()
		if afterStep == nil {
			return nil
		}
		return afterStep(total)
	}
	res, err := p.Store.Prune(ctx, params)
	p.mu.Lock()
	p.result = res
	p.mu.Unlock()
	return res, err
}

func (p *smallPruneSteps) LeaseRenew(ctx context.Context, params store.LeaseRenewParams) (store.Lease, error) {
	if params.Name == "cronfence:retention" {
		p.mu.Lock()
		p.renewals++
		p.mu.Unlock()
		if p.lost {
			return store.Lease{}, store.ErrLeaseLost
		}
	}
	return p.Store.LeaseRenew(ctx, params)
}

// pruneTenDays writes ten days of a daily job's history
// (writeDailyHistory) and starts a replica on st with a week's retention,
// which prunes at its first tick.
func pruneTenDays(c *cluster, st store.Store) {
	c.t.Helper()
	writeDailyHistory(c.t, st, c.db.Now())
	c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: 7 * 24 * time.Hour, Store: st},
		Job{Name: "daily", Schedule: "@daily", Handler: nopHandler})
	c.advance(time.Second, time.Second)
}

// A prune deletes in steps and renews its lease after each, so it goes on
// for as long as the history needs, one replica at a time: ten days of a
// daily job with a week's retention is three slots and three runs to
// delete, two steps of two.
func TestAPruneRenewsItsLeaseAtEveryStep(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		st := &smallPruneSteps{Store: c.open(t)}
		pruneTenDays(c, st)
		st.mu.Lock()
		defer st.mu.Unlock()
		if want := (store.PruneResult{Slots: 3, Runs: 3}); st.result != want {
			t.Fatalf("pruned %+v, want %+v", st.result, want)
		}
		if st.steps != 2 || st.renewals != 2 {
			t.Fatalf("%d steps and %d renewals of the retention lease; want 2 steps, each followed by a renewal", st.steps, st.renewals)
		}
	})
}

// A prune whose lease was lost stops after the step it was in: another
// replica may be pruning now. What that step deleted stays deleted.
func TestAPruneStopsWhenItsLeaseIsLost(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		st := &smallPruneSteps{Store: c.open(t), lost: true}
		pruneTenDays(c, st)
		st.mu.Lock()
		defer st.mu.Unlock()
		if want := (store.PruneResult{Slots: 2, Runs: 2}); st.result != want || st.steps != 1 {
			t.Fatalf("pruned %+v in %d steps; want %+v, the first step's, and no step after the lease was lost", st.result, st.steps, want)
		}
		runs, err := st.RunList(context.Background(), store.RunListParams{Job: "daily"})
		if err != nil || len(runs) != 8 {
			t.Fatalf("%d runs left (%v), want the 8 the first step left", len(runs), err)
		}
	})
}

// hangingPrune is a store whose prune never ends a step by itself (a
// database that stopped answering, a lock never granted): it waits for its
// context, and tells why that ended.
type hangingPrune struct {
	store.Store
	entered chan struct{}
	cause   chan error
}

func (h *hangingPrune) Prune(ctx context.Context, _ store.PruneParams) (store.PruneResult, error) {
	close(h.entered)
	<-ctx.Done()
	h.cause <- context.Cause(ctx)
	return store.PruneResult{}, ctx.Err()
}

// A prune step that does not end is cancelled prune.StepTimeout after the
// lease was last renewed, a minute before the retention lease would
// expire, so no other replica starts pruning beside it; and the lease is
// given back.
func TestAPruneStepThatDoesNotEndIsCancelledBeforeItsLeaseExpires(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		st := &hangingPrune{Store: c.open(t), entered: make(chan struct{}), cause: make(chan error, 1)}
		// It prunes as it starts, and the prune holds: one busy, one timer.
		c.startHolding(1, Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: 7 * 24 * time.Hour, Store: st},
			Job{Name: "daily", Schedule: "@daily", Handler: nopHandler})
		<-st.entered
		c.db.Advance(prune.StepTimeout - time.Second)
		select {
		case cause := <-st.cause:
			t.Fatalf("the prune step was cancelled %s before its timeout: %v", time.Second, cause)
		default:
		}
		c.db.Advance(time.Second)
		select {
		case cause := <-st.cause:
			if !errors.Is(cause, prune.ErrStepTimeout) {
				t.Fatalf("the prune step ended for %v; want prune.ErrStepTimeout", cause)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the prune step was not cancelled %s after it started", prune.StepTimeout)
		}
		c.settle()
		l, err := st.LeaseGet(context.Background(), "cronfence:retention")
		if err != nil {
			t.Fatal(err)
		}
		if now := c.db.Now(); l.ExpiresAt.After(now) {
			t.Fatalf("the retention lease = %+v, held until after now (%s); want it given back", l, now)
		}
	})
}
