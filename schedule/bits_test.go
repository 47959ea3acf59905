package schedule

import "testing"

func TestBitsetNextPrev(t *testing.T) {
	t.Parallel()
	b := bitset(1<<0 | 1<<5 | 1<<63)
	tests := []struct {
		v      int
		next   int
		nextOK bool
		prev   int
		prevOK bool
	}{
		{v: -1, next: 0, nextOK: true, prevOK: false},
		{v: 0, next: 0, nextOK: true, prev: 0, prevOK: true},
		{v: 1, next: 5, nextOK: true, prev: 0, prevOK: true},
		{v: 5, next: 5, nextOK: true, prev: 5, prevOK: true},
		{v: 6, next: 63, nextOK: true, prev: 5, prevOK: true},
		{v: 63, next: 63, nextOK: true, prev: 63, prevOK: true},
		{v: 64, nextOK: false, prev: 63, prevOK: true},
		{v: 1000, nextOK: false, prev: 63, prevOK: true},
	}
	for _, tt := range tests {
		n, ok := b.next(tt.v)
		if ok != tt.nextOK || (ok && n != tt.next) {
			t.Errorf("next(%d) = %d, %v; want %d, %v", tt.v, n, ok, tt.next, tt.nextOK)
		}
		p, ok := b.prev(tt.v)
		if ok != tt.prevOK || (ok && p != tt.prev) {
			t.Errorf("prev(%d) = %d, %v; want %d, %v", tt.v, p, ok, tt.prev, tt.prevOK)
		}
	}
}

func TestSpan(t *testing.T) {
	t.Parallel()
	tests := []struct {
		lo, hi int
		want   bitset
	}{
		{0, 0, 1},
		{1, 3, 0b1110},
		{0, 63, ^bitset(0)},
		{60, 63, 0xF << 60},
		{5, 4, 0},
	}
	for _, tt := range tests {
		if got := span(tt.lo, tt.hi); got != tt.want {
			t.Errorf("span(%d, %d) = %#x, want %#x", tt.lo, tt.hi, got, tt.want)
		}
	}
	if got := span(1, 31).count(); got != 31 {
		t.Errorf("span(1, 31).count() = %d, want 31", got)
	}
}
