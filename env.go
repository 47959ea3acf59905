package cronfence

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/internal/dbclock"
	"github.com/cronfence/cronfence/internal/service"
)

// env is what every part of a replica shares, fixed at New but for the
// liveness key Start takes: the services' base (store, logger, clocks,
// round-trip bound, the failures an outage repeats, the work in progress),
// the config with its defaults, and the clock slots are judged by.
type env struct {
	*service.Base
	cfg   Config
	clock *dbclock.Clock
	// claimLead is how long before its slot a timer's claim is sent
	// (claimLeadReal on the real clock; zero on a test's, which the
	// database cannot wait for).
	claimLead time.Duration
}

func newEnv(c Config) *env {
	e := &env{cfg: c, Base: &service.Base{
		Store: c.Store, Log: c.Logger.With("owner", c.Owner), Clock: c.Clock, Owner: c.Owner, StoreTimeout: c.StoreTimeout,
		LiveKey: new(atomic.Int64), Failures: new(service.Failures), Busy: new(atomic.Int64),
	}}
	if _, real := c.Clock.(clock.Real); real {
		e.claimLead = claimLeadReal
	}
	e.clock = &dbclock.Clock{Base: e.Base, CheckEvery: c.ClockCheckEvery, HeartbeatEvery: c.HeartbeatEvery,
		MaxSleep: c.MaxSleep, Warning: ClockOffsetWarning,
		Measured: func(offset time.Duration) { e.observe(ClockOffsetEvent{Offset: offset}) }}
	e.Now = e.clock.Now
	return e
}

// inRegistry reports whether this replica keeps a registry row, and so runs
// the absence checks and raises alerts.
func (e *env) inRegistry() bool { return e.cfg.HeartbeatEvery >= 0 }

// timers reports whether this replica fires slots; an API-only one
// (DisableTimers) leaves firing, pruning, resuming and the checks to the
// others.
func (e *env) timers() bool { return !e.cfg.DisableTimers }

// observe tells the Observer of ev, if there is one; a panic in it is
// logged and the event dropped.
func (e *env) observe(ev Event) {
	if e.cfg.Observer == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			e.Log.Error("cronfence: the observer panicked; the event is dropped", "event", fmt.Sprintf("%T", ev), "panic", p)
		}
	}()
	e.cfg.Observer.Observe(ev)
}

// claimLeadReal is how long before its slot, on the real clock, a slot's
// claim is sent: the claim is judged as of the slot by the database clock
// (store.SlotClaimParams.WaitDue) and its handler starts once the slot is
// due by that clock, so what comes between the slot and the claim's start
// (the loop's wake-up, a connection, the round trip: 7-22 ms measured)
// comes before the slot. It stays well inside store.MaxClaimWait.
const claimLeadReal = 50 * time.Millisecond
