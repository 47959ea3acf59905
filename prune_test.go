package cronfence

import (
	"context"
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
