package cronfence

import (
	"log/slog"
	"time"
)

// The store's reachability as the claims see it: down on a failed claim,
// up again (and catch-up scheduled) at the next round trip that reaches it.

// outage is that state. The scheduler's mu guards it.
type outage struct {
	down    bool                 // the last claim could not reach the store
	catchUp bool                 // the store came back: a catch-up pass is due
	missed  map[string]time.Time // per job, the latest slot left to catch-up while the store was down
}

// failed notes a claim of batch that could not reach the store and
// returns whether the store was down already, and the entries that run
// anyway. Scheduled slots and catch-ups are left to catch-up, except the
// scheduled slots of jobs that run without a lease (RunWhenStoreDown:
// fail-open); a resume is tried again by the scan after the store is back,
// a buffered slot by catch-up or the job's next run.
func (o *outage) failed(batch []*entry) (wasDown bool, failOpen []*entry) {
	wasDown, o.down = o.down, true
	for _, e := range batch {
		switch {
		case e.origin == OriginScheduled && e.job.RunWhenStoreDown:
			failOpen = append(failOpen, e)
		case e.origin.onTimer() && e.slot.After(o.missed[e.job.Name]):
			if o.missed == nil {
				o.missed = map[string]time.Time{}
			}
			o.missed[e.job.Name] = e.slot
		}
	}
	return wasDown, failOpen
}

// reached notes a round trip that reached the store; it reports whether
// that ended an outage, and schedules the catch-up pass then.
func (o *outage) reached() bool {
	if !o.down {
		return false
	}
	o.down, o.catchUp = false, true
	return true
}

// takeMissed returns the slots left to catch-up, once the store is back,
// and forgets them; ok is false while no catch-up pass is due.
func (o *outage) takeMissed() (missed map[string]time.Time, ok bool) {
	if !o.catchUp {
		return nil, false
	}
	missed, o.missed, o.catchUp = o.missed, nil, false
	return missed, true
}

// storeDown handles a claim that could not reach the store: the store
// counts as down until a round trip reaches it again (see outage.failed).
func (s *Scheduler) storeDown(err error, batch []*entry) {
	s.mu.Lock()
	_, failOpen := s.outage.failed(batch)
	s.mu.Unlock()
	// Once as the outage starts, then once a minute while it lasts.
	s.failures.failed(s.log, s.cfg.Clock.Now(), slog.LevelError, "cronfence: the store is unreachable; slots are left to catch-up",
		"error", err, "origin", batch[0].origin)
	for _, e := range failOpen {
		if !e.job.Disabled {
			s.warnRepeated("cronfence: running without a lease because the store is unreachable (RunWhenStoreDown)",
				"job", e.job.Name, "slot", e.slot)
			s.start(runSpec{job: e.job, slot: e.slot, attempt: 1, origin: OriginFailOpen})
		}
	}
}

// isDown reports whether the last claim could not reach the store.
func (s *Scheduler) isDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.outage.down
}

// storeUp notes a round trip that reached the store; after an outage it
// schedules a catch-up pass.
func (s *Scheduler) storeUp() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.outage.reached() {
		s.log.Info("cronfence: the store is reachable again; catching up")
		s.failures.reset()
		s.poke()
	}
}
