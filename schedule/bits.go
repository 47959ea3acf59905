package schedule

import "math/bits"

// bitset holds the values a field selects: bit v set means value v. Every
// field's values fit in 0..63 (days of the month use bits 1..31).
type bitset uint64

func (b bitset) has(v int) bool { return v >= 0 && v < 64 && b&(1<<uint(v)) != 0 }

// next returns the smallest value in b that is >= v.
func (b bitset) next(v int) (int, bool) {
	if v < 0 {
		v = 0
	}
	if v > 63 {
		return 0, false
	}
	m := b >> uint(v) << uint(v)
	if m == 0 {
		return 0, false
	}
	return bits.TrailingZeros64(uint64(m)), true
}

// prev returns the largest value in b that is <= v.
func (b bitset) prev(v int) (int, bool) {
	if v < 0 {
		return 0, false
	}
	m := b
	if v < 63 {
		m &= 1<<uint(v+1) - 1
	}
	if m == 0 {
		return 0, false
	}
	return 63 - bits.LeadingZeros64(uint64(m)), true
}

// first and last return the smallest and largest value; b must not be empty.
func (b bitset) first() int { return bits.TrailingZeros64(uint64(b)) }
func (b bitset) last() int  { return 63 - bits.LeadingZeros64(uint64(b)) }

// count returns how many values b selects.
func (b bitset) count() int { return bits.OnesCount64(uint64(b)) }

// span returns the set of values lo..hi.
func span(lo, hi int) bitset {
	if lo > hi {
		return 0
	}
	return (^bitset(0) >> uint(63-hi)) &^ (1<<uint(lo) - 1)
}
