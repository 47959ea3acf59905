package peers

import (
	"testing"
	"time"
)

// A slot told settled is remembered until SettledKeep has passed since
// the last notice of its instant, and only its own job's slot is.
func TestSettledSlotsAreKeptByInstant(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC)
	a, b := t0, t0.Add(time.Second)
	var s settledSlots
	s.add(keyOf("job-1", a), t0)
	s.add(keyOf("job-2", b), t0.Add(time.Second))
	for _, tc := range []struct {
		job  string
		slot time.Time
		want bool
	}{
		{"job-1", a, true}, {"job-2", b, true},
		{"job-1", b, false}, {"job-2", a, false}, {"job-3", a, false},
	} {
		if got := s.has(keyOf(tc.job, tc.slot)); got != tc.want {
			t.Errorf("has(%s, %s) = %v, want %v", tc.job, tc.slot.Format(time.TimeOnly), got, tc.want)
		}
	}

	// A late notice of a's instant keeps every slot of it.
	s.add(keyOf("job-3", a), t0.Add(5*time.Second))
	s.forget(t0.Add(12*time.Second), 10*time.Second)
	if !s.has(keyOf("job-1", a)) || !s.has(keyOf("job-3", a)) {
		t.Error("a's slots forgotten 7 s after the last notice of a, want kept for 10 s")
	}
	if s.has(keyOf("job-2", b)) {
		t.Error("b's slot kept 11 s after its notice, want forgotten after 10 s")
	}
	s.forget(t0.Add(15*time.Second+time.Nanosecond), 10*time.Second)
	if s.has(keyOf("job-1", a)) || len(s.byInstant) != 0 {
		t.Errorf("%d instants kept past SettledKeep, want none", len(s.byInstant))
	}

	// Told again after it was forgotten, a slot is settled again.
	s.add(keyOf("job-1", a), t0.Add(20*time.Second))
	if !s.has(keyOf("job-1", a)) {
		t.Error("a slot told after its instant was forgotten is not settled")
	}
}
