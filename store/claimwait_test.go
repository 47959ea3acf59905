package store

import (
	"testing"
	"time"
)

func TestDueWait(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	item := func(in time.Duration, wait bool) SlotClaimParams {
		return SlotClaimParams{Slot: now.Add(in), WaitDue: wait}
	}
	pinned := item(50*time.Millisecond, true)
	pinned.Now = now
	for _, tc := range []struct {
		name  string
		items []SlotClaimParams
		want  time.Duration
	}{
		{"none", nil, 0},
		{"due already", []SlotClaimParams{item(-time.Second, true), item(0, true)}, 0},
		{"not asked to wait", []SlotClaimParams{item(50*time.Millisecond, false)}, 0},
		{"the latest slot that asks", []SlotClaimParams{item(20*time.Millisecond, true), item(60*time.Millisecond, true), item(90*time.Millisecond, false)}, 60 * time.Millisecond},
		{"at the limit", []SlotClaimParams{item(MaxClaimWait, true)}, MaxClaimWait},
		{"beyond the limit: refused, not waited for", []SlotClaimParams{item(MaxClaimWait+time.Microsecond, true), item(10*time.Millisecond, true)}, 10 * time.Millisecond},
		{"a pinned clock never waits", []SlotClaimParams{pinned}, 0},
	} {
		if got := DueWait(tc.items, now); got != tc.want {
			t.Errorf("%s: DueWait = %s, want %s", tc.name, got, tc.want)
		}
	}
}
