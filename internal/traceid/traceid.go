// Package traceid derives the OpenTelemetry identities of a job's slot and
// its attempts from the job and the slot alone, so that every replica, and
// the command a run starts, name the same trace with nothing stored or
// exchanged. Package otel (its own module) records spans under them; serve
// hands a run's command its TRACEPARENT.
package traceid

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
)

// Trace is the trace of a job's slot: the first 16 bytes of
// SHA-256("cronfence/trace\x00" + job + "\x00" + slot), the slot in RFC
// 3339 with nanoseconds, UTC. Never all zero.
func Trace(job string, slot time.Time) [16]byte {
	h := sha256.Sum256([]byte("cronfence/trace\x00" + job + "\x00" + slotText(slot)))
	var id [16]byte
	copy(id[:], h[:16])
	if id == ([16]byte{}) {
		id[15] = 1
	}
	return id
}

// Span is the span of an attempt of a job's slot (attempt 0: the slot's
// own): the first 8 bytes of SHA-256("cronfence/span\x00" + job + "\x00" +
// slot + "\x00" + attempt). Never all zero.
func Span(job string, slot time.Time, attempt int) [8]byte {
	h := sha256.Sum256([]byte("cronfence/span\x00" + job + "\x00" + slotText(slot) + "\x00" + strconv.Itoa(attempt)))
	var id [8]byte
	copy(id[:], h[:8])
	if id == ([8]byte{}) {
		id[7] = 1
	}
	return id
}

// Parent is the W3C traceparent of an attempt of a job's slot,
// "00-<Trace>-<Span>-01".
func Parent(job string, slot time.Time, attempt int) string {
	t, s := Trace(job, slot), Span(job, slot, attempt)
	return "00-" + hex.EncodeToString(t[:]) + "-" + hex.EncodeToString(s[:]) + "-01"
}

func slotText(slot time.Time) string { return slot.UTC().Format(time.RFC3339Nano) }
