package cronfence

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Failures an outage repeats: while the store does not answer, every
// tick's clock probe fails, and so do every claim, absence check, scan and
// fail-open run's record. Each such message is logged when it first fails,
// then at most once every repeatEvery while it goes on (saying how many
// times it failed since its last line, and since when), and its spell
// ends when what failed succeeds again, or when the outage ends (storeUp),
// which is logged once.

// repeatEvery is how often a failure that goes on is logged again.
const repeatEvery = time.Minute

// failureLog holds the spells of failures going on, by message. Safe for
// concurrent use.
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

// failed logs msg at level with args when it starts a spell, or when
// repeatEvery has passed since its last line (then with "repeated", the
// failures since that line, this one included, and "failing_since");
// otherwise it only counts it. now is the scheduler's clock.
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

// warnRepeated logs a warning an outage repeats, once, then at most once
// every repeatEvery (see failureLog).
func (s *Scheduler) warnRepeated(msg string, args ...any) {
	s.failures.failed(s.log, s.cfg.Clock.Now(), slog.LevelWarn, msg, args...)
}
