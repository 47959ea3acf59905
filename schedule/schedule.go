package schedule

import "time"

// Schedule computes the slots (intended occurrences) of a job.
//
// Slots are whole seconds, returned in the schedule's location. Next and
// Prev describe one and the same set of slots from both sides, so a slot
// found going forwards is found going backwards too. A Schedule is
// immutable and safe for concurrent use.
type Schedule interface {
	// Next returns the first slot strictly after t, or the zero time if
	// there is none (after the year 9999).
	Next(t time.Time) time.Time
	// Prev returns the most recent slot at or before t, or the zero time
	// if there is none.
	Prev(t time.Time) time.Time
	// String returns the spec as written, with runs of white space
	// reduced to one space, for logs and config-drift hashes.
	String() string
}

// Options for Parse; nil means defaults.
type Options struct {
	// Location is the job's time zone. A CRON_TZ= or TZ= prefix in the
	// spec overrides it. Prefer a named IANA zone to time.Local, which
	// may differ between the machines of a cluster. Defaults to UTC.
	Location *time.Location
	// Anchor is the origin of @every intervals: the slots of "@every D"
	// are Anchor + k·D. It must be a whole second between the years 1 and
	// 9999. Defaults to the Unix epoch, time.Unix(0, 0).
	Anchor time.Time
}

// Slots exist only from 0001-01-01T00:00:01Z to 9999-12-31T23:59:59Z:
// beyond, Next and Prev return the zero time. The range is RFC 3339's
// (slots travel as RFC 3339 strings) minus the zero time itself, which
// means "no slot".
const (
	minSlot int64 = -62135596799 // 0001-01-01T00:00:01Z
	maxSlot int64 = 253402300799 // 9999-12-31T23:59:59Z
)

// MaxSpecLen is the longest spec Parse accepts, in bytes.
const MaxSpecLen = 1024
