package cronfence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/store"
)

// env is what every part of a replica shares, fixed at New but for the
// liveness key Start takes: its config (defaults applied), store and
// logger, the clock slots are judged by, the observer, the failures an
// outage repeats, and the count of work in progress the tests wait on.
type env struct {
	cfg   Config
	store store.Store
	log   *slog.Logger
	clock *dbClock
	// claimLead is how long before its slot a timer's claim is sent
	// (claimLeadReal on the real clock; zero on a test's, which the
	// database cannot wait for).
	claimLead time.Duration
	liveKey   atomic.Int64 // this replica's liveness key (store.Liveness); zero without one
	failures  failureLog
	// busy counts the ticks, scans, passes and runs in progress: the
	// tests' harness waits until it is zero and every loop sleeps.
	busy atomic.Int64
}

func newEnv(c Config) *env {
	e := &env{cfg: c, store: c.Store, log: c.Logger.With("owner", c.Owner)}
	if _, real := c.Clock.(clock.Real); real {
		e.claimLead = claimLeadReal
	}
	e.clock = &dbClock{e: e}
	return e
}

// now is the time slots are judged by (dbClock.now).
func (e *env) now() time.Time { return e.clock.now() }

// registers reports whether this replica keeps a registry row, and so runs
// the absence checks and raises alerts.
func (e *env) registers() bool { return e.cfg.HeartbeatEvery >= 0 }

// timers reports whether this replica fires slots; an API-only one
// (DisableTimers) leaves firing, pruning, resuming and the checks to the
// others.
func (e *env) timers() bool { return !e.cfg.DisableTimers }

// errStoreTimeout is the cause of a store round trip of the scheduler's
// that did not answer within Config.StoreTimeout.
var errStoreTimeout = errors.New("cronfence: the store did not answer within Config.StoreTimeout")

// bounded returns parent bounded by Config.StoreTimeout, for one store
// round trip the scheduler makes on its own: a database that accepts
// connections but does not answer must not hold the loop for good. Real
// time, not Clock: it bounds how long a real database takes to answer.
func (e *env) bounded(parent context.Context) (context.Context, func()) {
	return context.WithTimeoutCause(parent, e.cfg.StoreTimeout, errStoreTimeout)
}

// timedOut is err, from a store call bounded by bctx (bounded's, under
// ctx), wrapping errStoreTimeout when that bound ended the call and ctx
// did not.
func (e *env) timedOut(ctx, bctx context.Context, err error) error {
	if err != nil && context.Cause(bctx) == errStoreTimeout && ctx.Err() == nil {
		return fmt.Errorf("%w (after %s): %w", errStoreTimeout, e.cfg.StoreTimeout, err)
	}
	return err
}

// observe tells the Observer of e, if there is one; a panic in it is
// logged and the event dropped.
func (e *env) observe(ev Event) {
	if e.cfg.Observer == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			e.log.Error("cronfence: the observer panicked; the event is dropped", "event", fmt.Sprintf("%T", ev), "panic", p)
		}
	}()
	e.cfg.Observer.Observe(ev)
}

// warnRepeated logs a warning an outage repeats: once, then at most once
// every repeatEvery while it goes on.
func (e *env) warnRepeated(msg string, args ...any) {
	e.failures.failed(e.log, e.cfg.Clock.Now(), slog.LevelWarn, msg, args...)
}

// takeLease takes a cluster-wide lease of this replica's (pruning, the
// absence checks) when it is free; false when another replica holds it or
// the store could not be reached, which is logged.
func (e *env) takeLease(ctx context.Context, name string, ttl time.Duration) (store.Lease, bool) {
	ctx, cancel := e.bounded(ctx)
	defer cancel()
	failed := "cronfence: could not take the lease " + name
	l, ok, err := e.store.LeaseAcquire(ctx, store.LeaseAcquireParams{Name: name, Owner: e.cfg.Owner, TTL: ttl, LiveKey: e.liveKey.Load()})
	if err != nil {
		if ctx.Err() == nil {
			e.warnRepeated(failed, "error", err)
		}
		return store.Lease{}, false
	}
	e.failures.over(failed)
	return l, ok
}

// claimLeadReal is how long before its slot, on the real clock, a slot's
// claim is sent: the claim is judged as of the slot by the database clock
// (store.SlotClaimParams.WaitDue) and its handler starts once the slot is
// due by that clock, so what comes between the slot and the claim's start
// (the loop's wake-up, a connection, the round trip: 7-22 ms measured)
// comes before the slot. It stays well inside store.MaxClaimWait.
const claimLeadReal = 50 * time.Millisecond

// removeTimeout bounds the round trips a replica makes as it stops
// (giving the monitor lease up, removing its registry row), so a store
// that went away does not hold up shutdown for long.
const removeTimeout = 5 * time.Second

// repeatEvery is how often a failure that goes on is logged again.
const repeatEvery = time.Minute

// failureLog holds the failures an outage repeats, by message: while the
// store does not answer, every tick's clock probe fails, and so do every
// claim, check, scan and fail-open run's record. Each message is logged
// when it first fails, then at most once every repeatEvery (with how many
// times it failed since its last line, and since when), until what failed
// succeeds again (over) or the store answers again (reset).
type failureLog struct {
	mu     sync.Mutex
	spells map[string]*spell
}

// spell is one message's failures since it last succeeded.
type spell struct {
	since    time.Time // its first failure
	logged   time.Time // its last line
	unlogged int       // failures since that line
}

// failed logs msg at level when it starts a spell, or when repeatEvery has
// passed since its last line (then with "repeated" and "failing_since");
// otherwise it only counts it. now is the replica's clock.
func (f *failureLog) failed(log *slog.Logger, now time.Time, level slog.Level, msg string, args ...any) {
	f.mu.Lock()
	sp := f.spells[msg]
	if sp == nil {
		if f.spells == nil {
			f.spells = map[string]*spell{}
		}
		f.spells[msg] = &spell{since: now, logged: now}
		f.mu.Unlock()
		log.Log(context.Background(), level, msg, args...)
		return
	}
	if now.Before(sp.logged) {
		sp.logged = now // this clock went back: count from here
	}
	if now.Sub(sp.logged) < repeatEvery {
		sp.unlogged++
		f.mu.Unlock()
		return
	}
	repeated, since := sp.unlogged+1, sp.since
	sp.logged, sp.unlogged = now, 0
	f.mu.Unlock()
	log.Log(context.Background(), level, msg, append(args, "repeated", repeated, "failing_since", since)...)
}

// over ends msg's spell, if one is going on: its next failure is logged at
// once.
func (f *failureLog) over(msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.spells, msg)
}

// reset ends every spell: the store answers again.
func (f *failureLog) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.spells)
}
