package peers

import "time"

// settledSlots are the slots told settled (a claim, a recorded skip, a
// run's end), for the fallbacks that ask whether theirs was. Under load
// every replica hears every slot twice, thousands a second, and asks as
// often; so they are kept by slot instant: a set of job names each, the
// size of one instant's jobs, and forgetting drops whole instants instead
// of visiting every slot heard. An instant is forgotten once SettledKeep
// passed since the last notice of it. The zero value is ready.
type settledSlots struct {
	byInstant map[int64]*instantSlots
	// made is how many jobs the instant forgotten last held: the next is
	// made that large, rather than grown to it.
	made int
}

type instantSlots struct {
	jobs  map[string]struct{}
	heard time.Time // the last notice of one of its slots
}

func (s *settledSlots) add(key slotKey, now time.Time) {
	in := s.byInstant[key.slot]
	if in == nil {
		if s.byInstant == nil {
			s.byInstant = map[int64]*instantSlots{}
		}
		in = &instantSlots{jobs: make(map[string]struct{}, s.made)}
		s.byInstant[key.slot] = in
	}
	in.jobs[key.job] = struct{}{}
	in.heard = now
}

func (s *settledSlots) has(key slotKey) bool {
	in := s.byInstant[key.slot]
	if in == nil {
		return false
	}
	_, ok := in.jobs[key.job]
	return ok
}

// forget drops the instants last heard more than keep before now.
func (s *settledSlots) forget(now time.Time, keep time.Duration) {
	for slot, in := range s.byInstant {
		if now.Sub(in.heard) > keep {
			s.made = len(in.jobs)
			delete(s.byInstant, slot)
		}
	}
}
