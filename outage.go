package cronfence

import (
	"time"

	"github.com/cronfence/cronfence/store"
)

// The store's reachability as the claims see it: down on a failed claim,
// up again (and catch-up scheduled) at the next that reaches it.

// storeDown handles a claim that could not reach the store: the slots are
// left to catch-up, except for jobs that run anyway (fail-open).
func (s *Scheduler) storeDown(err error, due []*entry) {
	s.mu.Lock()
	wasDown := s.down
	s.down = true
	for _, e := range due {
		if !e.job.RunWhenStoreDown && e.slot.After(s.missed[e.job.Name]) {
			s.missed[e.job.Name] = e.slot
		}
	}
	s.mu.Unlock()
	if !wasDown {
		s.log.Error("cronfence: the store is unreachable; slots are left to catch-up", "error", err)
	}
	for _, e := range due {
		if e.job.RunWhenStoreDown && !e.job.Disabled {
			s.log.Warn("cronfence: running without a lease because the store is unreachable (RunWhenStoreDown)",
				"job", e.job.Name, "slot", e.slot)
			s.startRun(e.job, store.SlotClaimResult{Slot: store.Slot{Job: e.job.Name, Slot: e.slot, Attempts: 1}}, time.Time{}, false, "")
		}
	}
}

// isDown reports whether the last claim could not reach the store.
func (s *Scheduler) isDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down
}

// storeUp notes a round trip that reached the store; after an outage it
// schedules a catch-up pass.
func (s *Scheduler) storeUp() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		s.down = false
		s.catchUp = true
		s.log.Info("cronfence: the store is reachable again; catching up")
		s.poke()
	}
}
