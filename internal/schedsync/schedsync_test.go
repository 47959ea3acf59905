package schedsync

import (
	"testing"
	"time"
)

// A gap in the notices (a listener that connected after a change was
// committed) makes the next tick read the change log, also with polling
// off; without a gap, a replica that polls not and was told nothing reads
// nothing.
func TestAGapIsReadWithPollingOff(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := &Sync{Every: 0, loaded: true, seq: 7}
	if s.Due(now) {
		t.Fatal("loaded, polling off, told nothing: a tick would read")
	}
	if _, ok := s.Next(); ok {
		t.Fatal("loaded, polling off, told nothing: a tick is due")
	}
	s.Missed()
	if !s.Due(now) {
		t.Fatal("after a gap, with polling off, the next tick would not read the log")
	}
	if at, ok := s.Next(); !ok || !at.IsZero() {
		t.Fatalf("after a gap the next tick is due at %s (%v), want at once", at, ok)
	}
}
