package cronfence

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/wait"
	"github.com/cronfence/cronfence/store"
)

// heldEnds is a store whose runs' ends are held back until release, as a
// loaded database holds them, and which logs, in order, each end answered
// and each claim sent.
type heldEnds struct {
	store.Store
	*gate // the ends' calls wait at it

	mu     sync.Mutex
	events []string // "end <job>" once answered, "claim <job> <slot>" as sent
}

func (h *heldEnds) log(e string) {
	h.mu.Lock()
	h.events = append(h.events, e)
	h.mu.Unlock()
}

func (h *heldEnds) logged() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.events...)
}

func (h *heldEnds) SlotFinish(ctx context.Context, p store.SlotFinishParams) (store.SlotFinishResult, error) {
	if err := h.passUnlessDone(ctx); err != nil {
		return store.SlotFinishResult{}, err
	}
	r, err := h.Store.SlotFinish(ctx, p)
	h.log("end " + p.Job)
	return r, err
}

func (h *heldEnds) SlotFinishBatch(ctx context.Context, items []store.SlotFinishParams) ([]store.SlotFinishResult, error) {
	if err := h.passUnlessDone(ctx); err != nil {
		return nil, err
	}
	r, err := h.Store.SlotFinishBatch(ctx, items)
	for _, p := range items {
		h.log("end " + p.Job)
	}
	return r, err
}

func (h *heldEnds) SlotClaimBatch(ctx context.Context, items []store.SlotClaimParams) ([]store.SlotClaimResult, error) {
	for _, p := range items {
		h.log("claim " + p.Job + " " + p.Slot.Format(time.TimeOnly))
	}
	return h.Store.SlotClaimBatch(ctx, items)
}

// A replica whose runs' ends wait to be recorded behind the batch in
// flight (a backlog: under load) records them before it claims its next
// slots. Each end releases a job's lease; claimed first, the job's next
// slot found the lease held, was recorded buffered, and was claimed again
// once the end was in: under overload, two claims for a run, and claims
// that slowed the ends further.
func TestARunsEndsAreRecordedBeforeTheNextClaims(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		held := &heldEnds{Store: c.open(t), gate: newGate()}
		release := sync.OnceFunc(func() { close(held.release) })
		l := newLedger()
		// The ends of one and two go, and are held (in one batch or two);
		// three's run ends only then, so its end waits behind them.
		afterHeld := func(ctx context.Context, run *Run) error {
			select {
			case <-held.entered:
			case <-ctx.Done():
			}
			return l.handler(c.db)(ctx, run)
		}
		s := c.startHolding(-1, Config{Owner: "a", Store: held, Clock: offsetClock{c.db, 0}, Retention: -1},
			Job{Name: "one", Schedule: "*/10 * * * * *", Handler: l.handler(c.db)},
			Job{Name: "two", Schedule: "*/10 * * * * *", Handler: l.handler(c.db)},
			Job{Name: "three", Schedule: "*/10 * * * * *", Handler: afterHeld})
		t.Cleanup(release) // after startHolding's: cleanups run last first, so before the replica's Stop
		first := c.db.Now().Truncate(10 * time.Second).Add(10 * time.Second)
		c.db.Advance(first.Sub(c.db.Now()))
		backlog := func() bool {
			return s.runner.finish.batch.Queued() > 0
		}
		wait.For(t, 10*time.Second, backlog, func() string { return "the runs' ends did not queue up" })

		// The next slots fall due while the ends are held.
		c.db.Advance(10 * time.Second)
		next := first.Add(10 * time.Second).Format(time.TimeOnly)
		isNextClaim := func(e string) bool { return strings.HasPrefix(e, "claim ") && strings.HasSuffix(e, " "+next) }
		claimedNext := func() bool { return slices.ContainsFunc(held.logged(), isNextClaim) }
		draining := func() bool {
			return s.runner.finish.batch.Draining()
		}
		wait.For(t, 10*time.Second, func() bool { return claimedNext() || draining() },
			func() string { return "the replica neither claimed its next slots nor waited for its ends" })
		if claimedNext() {
			t.Fatalf("the replica claimed its next slots while its runs' ends waited to be recorded: %v", held.logged())
		}
		release()
		wait.For(t, 10*time.Second, claimedNext, func() string { return "the next slots were not claimed once the ends were in" })
		events := held.logged()
		ends := 0
		for _, e := range events {
			if strings.HasPrefix(e, "end ") {
				ends++
				continue
			}
			if isNextClaim(e) && ends < 3 {
				t.Fatalf("a claim of the next slots went before the three ends were answered: %v", events)
			}
		}
		wait.For(t, 10*time.Second, func() bool {
			return l.ran("one", first.Add(10*time.Second)) == 1 && l.ran("two", first.Add(10*time.Second)) == 1 &&
				l.ran("three", first.Add(10*time.Second)) == 1
		}, func() string { return "the next slots did not run" })
	})
}
