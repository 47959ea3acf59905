// Package schedsync keeps a replica's view of the stored schedules in step
// with the store: it loads them all once, then reads the change log after
// the last change it applied, at every poll (Every) and at once when told
// of a change (a PostgreSQL notice). A replica that missed notices, or
// whose change log was cut short under it, loses nothing: the log's
// sequence numbers say what it has not seen, and a log that no longer
// holds them makes it load everything again.
package schedsync

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/cronfence/cronfence/internal/service"
	"github.com/cronfence/cronfence/store"
)

// pageSize is how many schedules or changes one read brings.
const pageSize = 5000

// BackstopEvery is how often the change log is read while the store tells
// every change (Hearing): a notice lost on a connection that broke comes
// with a gap (Missed), so this read only guards against what nobody
// foresaw, and costs a replica one statement in five minutes, not one
// every poll.
const BackstopEvery = 5 * time.Minute

// Sync reads the stored schedules into a replica. Set its exported fields
// before the first Tick.
type Sync struct {
	*service.Base
	// Every is how often the change log is read when no notice says it
	// changed. Zero turns polling off (a test drives Tick itself).
	Every time.Duration
	// Hearing, when set, reports whether the store tells this replica of
	// every change now (peers.Hearing): then the log is read when told,
	// and every BackstopEvery.
	Hearing func() bool
	// Load replaces the replica's view by every stored schedule.
	Load func(all []store.Schedule)
	// Apply applies one change, in the log's order.
	Apply func(ch store.ScheduleChange)
	// Applied, when set, is called after a read that applied changes, with
	// the last sequence number applied (a test's signal).
	Applied func(seq int64)

	mu        sync.Mutex
	loaded    bool
	seq       int64     // the last change applied
	told      int64     // the newest change a notice told of
	missed    bool      // notices may have been missed: read the log, polling or not
	next      time.Time // the next poll
	notBefore time.Time // after a failed read: not again before, told or not
}

// retryAfter is how long after a failed read the next is tried when a
// notice, not the poll, asks for it: a store that fails is not hammered.
const retryAfter = time.Second

// Told notes that the change seq was committed: the next Tick reads it.
func (s *Sync) Told(seq int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.told = max(s.told, seq)
}

// Missed notes that notices may have been missed (a listener that
// connected, or reconnected): the next Tick reads the log, polling or not.
// A change committed before the listener listened is read so, rather than
// waiting for a poll, or for good with polling off.
func (s *Sync) Missed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.missed = true
}

// Due reports whether a Tick at now would read the store.
func (s *Sync) Due(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Before(s.notBefore) {
		return false
	}
	return !s.loaded || s.missed || s.told > s.seq || (s.Every > 0 && !now.Before(s.next))
}

// Next is when a Tick is next due: at once (or once a failed read may be
// tried again) when a notice told of a change not read, else the next
// poll; false when neither is coming (polling off, nothing told).
func (s *Sync) Next() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.told > s.seq, s.missed:
		return s.notBefore, true
	case s.Every <= 0 && s.loaded:
		return time.Time{}, false
	}
	if s.notBefore.After(s.next) {
		return s.notBefore, true
	}
	return s.next, true
}

// Tick loads the schedules the first time, and reads the changes after
// the last applied when due. A store that fails is tried again at the
// next tick; what was applied stays.
func (s *Sync) Tick(ctx context.Context, now time.Time) {
	if !s.Due(now) {
		return
	}
	every := s.Every
	if every > 0 && s.Hearing != nil && s.Hearing() {
		every = BackstopEvery
	}
	s.mu.Lock()
	s.next = now.Add(every)
	loaded, seq := s.loaded, s.seq
	s.missed = false // a gap told during the read below is read by the next
	s.mu.Unlock()

	var err error
	if !loaded {
		seq, err = s.load(ctx)
	} else {
		seq, err = s.changes(ctx, seq)
	}
	if err != nil {
		s.Failures.Failed(s.Log, now, slog.LevelWarn, "cronfence: could not read the stored schedules; the replica keeps those it knows", "error", err)
		s.mu.Lock()
		s.notBefore = now.Add(retryAfter)
		s.missed = true // still to read
		s.mu.Unlock()
		return
	}
	s.mu.Lock()
	changed := seq != s.seq || !s.loaded
	s.loaded, s.seq = true, seq
	s.mu.Unlock()
	if changed && s.Applied != nil {
		s.Applied(seq)
	}
}

// Seq is the last change applied.
func (s *Sync) Seq() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
}

// load reads every schedule, and the changes committed while it read, and
// returns the last change applied. The log's newest sequence number is read
// first: a change committed after it is read again from the log, and
// applying a change the list already showed changes nothing.
func (s *Sync) load(ctx context.Context) (int64, error) {
	head, err := s.read(ctx, store.ScheduleChangesParams{Limit: 1})
	if err != nil {
		return 0, err
	}
	var all []store.Schedule
	after := ""
	for {
		page, err := s.list(ctx, after)
		if err != nil {
			return 0, err
		}
		all = append(all, page...)
		if len(page) < pageSize {
			break
		}
		after = page[len(page)-1].Name
	}
	s.Load(all)
	return s.changes(ctx, head.Latest)
}

// changes applies the log after seq and returns the last applied; when
// the log no longer holds the change after seq, it loads everything.
func (s *Sync) changes(ctx context.Context, seq int64) (int64, error) {
	for {
		page, err := s.read(ctx, store.ScheduleChangesParams{After: seq, Limit: pageSize})
		if err != nil {
			return seq, err
		}
		if page.Oldest > seq+1 {
			s.Log.Warn("cronfence: the schedules' change log was cut short since this replica last read it; loading every schedule again",
				"applied", seq, "oldest", page.Oldest)
			return s.load(ctx)
		}
		for _, ch := range page.Changes {
			s.Apply(ch)
			seq = ch.Seq
		}
		if len(page.Changes) < pageSize {
			return seq, nil
		}
	}
}

func (s *Sync) read(ctx context.Context, p store.ScheduleChangesParams) (store.ScheduleChanges, error) {
	bctx, cancel := s.Bounded(ctx)
	defer cancel()
	page, err := s.Store.ScheduleChanges(bctx, p)
	return page, s.TimedOut(ctx, bctx, err)
}

func (s *Sync) list(ctx context.Context, after string) ([]store.Schedule, error) {
	bctx, cancel := s.Bounded(ctx)
	defer cancel()
	page, err := s.Store.ScheduleList(bctx, store.ScheduleListParams{After: after, Limit: pageSize})
	return page, s.TimedOut(ctx, bctx, err)
}
