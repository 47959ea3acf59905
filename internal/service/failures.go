package service

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// RepeatEvery is how often a failure that goes on is logged again.
const RepeatEvery = time.Minute

// Failures holds the failures an outage repeats, by message: while the
// store does not answer, every tick's clock probe fails, and so do every
// claim, check, scan and fail-open run's record. Each message is logged
// when it first fails, then at most once every RepeatEvery (with how many
// times it failed since its last line, and since when), until what failed
// succeeds again (Over) or the store answers again (Reset). Safe for
// concurrent use; the zero value is ready.
type Failures struct {
	mu     sync.Mutex
	spells map[string]*spell
}

// spell is one message's failures since it last succeeded.
type spell struct {
	since    time.Time // its first failure
	logged   time.Time // its last line
	unlogged int       // failures since that line
}

// Failed logs msg at level when it starts a spell, or when RepeatEvery has
// passed since its last line (then with "repeated" and "failing_since");
// otherwise it only counts it. now is the replica's clock.
func (f *Failures) Failed(log *slog.Logger, now time.Time, level slog.Level, msg string, args ...any) {
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
	if now.Sub(sp.logged) < RepeatEvery {
		sp.unlogged++
		f.mu.Unlock()
		return
	}
	repeated, since := sp.unlogged+1, sp.since
	sp.logged, sp.unlogged = now, 0
	f.mu.Unlock()
	log.Log(context.Background(), level, msg, append(args, "repeated", repeated, "failing_since", since)...)
}

// Over ends msg's spell, if one is going on: its next failure is logged at
// once.
func (f *Failures) Over(msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.spells, msg)
}

// Reset ends every spell: the store answers again.
func (f *Failures) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.spells)
}
