package cronfence

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// outageStore cuts the store off on demand (claims and clock reads fail)
// and counts the clock probes a replica sends meanwhile.
type outageStore struct {
	store.Store
	down   *atomic.Bool
	probes *atomic.Int64
}

var errCut = errors.New("connection refused (test outage)")

func (o *outageStore) Now(ctx context.Context) (time.Time, error) {
	if o.down.Load() {
		o.probes.Add(1)
		return time.Time{}, errCut
	}
	return o.Store.Now(ctx)
}

func (o *outageStore) SlotClaimBatch(ctx context.Context, items []store.SlotClaimParams) ([]store.SlotClaimResult, error) {
	if o.down.Load() {
		return nil, errCut
	}
	return o.Store.SlotClaimBatch(ctx, items)
}

// While the store is unreachable a replica probes it once a tick, not in a
// tight loop: the resume scan it skips meanwhile must not leave its loop
// sleeping for zero (the chaos suite saw 220,000 probes in 6 s, and the
// spinning replica starved its neighbours' lease renewals).
func TestStoreOutageDoesNotSpinTheLoop(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		var down atomic.Bool
		var probes atomic.Int64
		open := c.open
		c.open = func(t *testing.T) store.Store { return &outageStore{Store: open(t), down: &down, probes: &probes} }
		job := Job{Name: "tick", Schedule: "* * * * * *", Handler: nopHandler}
		c.start("replica", 0, job)
		c.advance(3*time.Second, time.Second)

		down.Store(true)
		c.advance(10*time.Second, time.Second)
		// One probe at the failed fire and at most a couple a tick after.
		if n := probes.Load(); n == 0 || n > 40 {
			t.Fatalf("%d clock probes during a 10 s outage; want a few a second, not a spin", n)
		}
		down.Store(false)
		c.advance(2*time.Second, time.Second)
	})
}

// flakyStore fails the next n claims, as a pooled connection a database
// restart killed fails the first statement sent on it.
type flakyStore struct {
	store.Store
	failNext *atomic.Int64
}

func (f *flakyStore) SlotClaimBatch(ctx context.Context, items []store.SlotClaimParams) ([]store.SlotClaimResult, error) {
	if f.failNext.Add(-1) >= 0 {
		return nil, errCut
	}
	return f.Store.SlotClaimBatch(ctx, items)
}

// One failed claim does not lose the slot: the replica tries once more at
// once, and only a second failure leaves the slot to catch-up.
func TestOneFailedClaimIsRetried(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		var failNext atomic.Int64
		open := c.open
		c.open = func(t *testing.T) store.Store { return &flakyStore{Store: open(t), failNext: &failNext} }
		l := newLedger()
		job := Job{Name: "tick", Schedule: "* * * * * *", Handler: l.handler(c.db)}
		start := c.db.Now()
		c.start("replica", 0, job)
		c.advance(3*time.Second, time.Second)
		failNext.Store(1)
		c.advance(3*time.Second, time.Second)
		l.wantEachOnce(t, "tick", start.Add(time.Second), start.Add(7*time.Second), time.Second)
		c.wantNeverDown()
	})
}

// A database outage is logged once when it starts, then at most once a
// minute while it lasts, and its end once, for every message it would
// repeat (the clock probe, the claims, the heartbeat, the resume scan,
// the absence checks, the fail-open runs' records, ...): docs/scheduler.md
// promises the failure is logged once, and an operator must not find a
// line a second. Here a replica's connections go through a proxy that
// refuses them for three minutes (the shared server is not touched).
func TestStoreOutageIsLoggedOnceThenAtMostEveryMinute(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs PostgreSQL")
	}
	t.Parallel()
	c, _, throughProxy, proxy := proxiedCluster(t)
	logs := &lineCounter{n: map[string]int{}}
	jobs := []Job{
		{Name: "tick", Schedule: "* * * * * *", Handler: nopHandler},
		{Name: "open", Schedule: "* * * * * *", RunWhenStoreDown: true, Handler: nopHandler},
		{Name: "hourly", Schedule: "@hourly", CatchUpWindow: time.Hour, Handler: nopHandler},
	}
	c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Store: throughProxy, Logger: slog.New(logs)}, jobs...)
	c.advance(20*time.Second, time.Second) // a heartbeat, an absence check and a prune behind it

	logs.reset()
	proxy.Cut()
	const outage = 3 * time.Minute
	c.advance(outage, time.Second)
	during := logs.reset()
	proxy.Restore()
	c.advance(30*time.Second, time.Second)
	after := logs.reset()

	// Once at the start and once a minute after: four lines in three
	// minutes at most, of each message. A run's own end is a line per run.
	limit := 1 + int(outage/time.Minute)
	for msg, n := range during {
		if n > limit && msg != "cronfence: run ended" {
			t.Errorf("%q logged %d times in a %s outage, want at most %d (once, then once a minute)", msg, n, outage, limit)
		}
	}
	if during["cronfence: the store is unreachable; slots are left to catch-up"] == 0 {
		t.Errorf("the outage was not logged; lines: %v", during)
	}
	if n := after["cronfence: the store is reachable again; catching up"]; n != 1 {
		t.Errorf("the recovery was logged %d times, want once; lines after: %v", n, after)
	}
	for msg, n := range during {
		if strings.HasPrefix(msg, "cronfence: ") {
			t.Logf("%3d× %s", n, msg)
		}
	}
}

// lineCounter is a slog handler that counts records by message.
type lineCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (l *lineCounter) Enabled(_ context.Context, level slog.Level) bool {
	return level >= slog.LevelInfo
}

func (l *lineCounter) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n[r.Message]++
	return nil
}

func (l *lineCounter) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *lineCounter) WithGroup(string) slog.Handler      { return l }

// reset returns the counts so far and starts again from zero.
func (l *lineCounter) reset() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.n
	l.n = map[string]int{}
	return n
}
