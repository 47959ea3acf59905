// Package jitter computes a job's start delay for one slot: a hash of the
// job's name and the slot alone, so every replica (and a forecast) derives
// the same delay without talking to another.
package jitter

import (
	"encoding/binary"
	"hash/fnv"
	"time"
)

// Delay is how long after slot the run of job's slot starts, for a jitter
// bound of jitter: below jitter, and below next.Sub(slot) when next (the
// job's following slot) is not zero, so a delayed run never starts at or
// after the next slot whatever daylight-saving changes did to the
// intervals. Zero when jitter is not positive.
func Delay(job string, jitter time.Duration, slot, next time.Time) time.Duration {
	if jitter <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(job))
	var b [9]byte
	b[0] = '@' // the name's end: "a" at slot 1 is not "a\x00…" at another
	binary.BigEndian.PutUint64(b[1:], uint64(slot.UnixNano()))
	h.Write(b[:])
	d := time.Duration(h.Sum64() % uint64(jitter))
	if !next.IsZero() && d >= next.Sub(slot) {
		d %= next.Sub(slot)
	}
	return d
}
