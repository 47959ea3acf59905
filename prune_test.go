package cronfence

import (
	"context"
	"sync"
	"testing"
	"time"

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
		c.db.Advance(time.Second) // the first tick: it prunes, and fires 12:00:01
		select {
		case <-st.entered:
		case <-time.After(30 * time.Second):
			t.Fatal("no prune started at the first tick")
		}
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
// the history grew without bound. It is bounded by its lease instead.
func TestAPruneIsNotCutOffAtTheStoreTimeout(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		st := &pruneDeadlines{Store: c.open(t)}
		c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: 24 * time.Hour, Store: st, StoreTimeout: time.Second},
			Job{Name: "daily", Schedule: "@daily", Handler: nopHandler})
		c.advance(time.Second, time.Second) // the first tick prunes
		st.mu.Lock()
		defer st.mu.Unlock()
		if len(st.left) != 1 || st.left[0] < pruneLeaseTTL/2 || st.left[0] >= pruneLeaseTTL {
			t.Fatalf("the prunes had %v to finish; want one, bounded short of its lease's %s, not by StoreTimeout (1s)", st.left, pruneLeaseTTL)
		}
	})
}
