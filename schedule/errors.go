package schedule

import (
	"strconv"
	"unicode/utf8"
)

// ParseError reports a spec (or an Options value) that Parse cannot accept.
// Its message names the part at fault and quotes the offending text, so a
// config validator can show it as is:
//
//	schedule: day-of-month field "32": value 32 out of range 1-31
//	schedule: time zone "Mars/Olympus": unknown time zone Mars/Olympus
//
// Retrieve it with errors.As; Unwrap returns the underlying reason (for a
// time zone, the error from time.LoadLocation).
type ParseError struct {
	// Field is the part of the spec at fault: one of the six cron fields
	// ("second", "minute", "hour", "day-of-month", "month", "day-of-week"),
	// "time zone", "descriptor", "@every", "spec" (the spec as a whole) or
	// "Options.Anchor".
	Field string
	// Text is the offending text as written. The message cuts very long
	// text short.
	Text string
	// Err says what is wrong with Text.
	Err error
}

func (e *ParseError) Error() string {
	return "schedule: " + fieldLabel(e.Field) + " " + quote(e.Text) + ": " + e.Err.Error()
}

// Unwrap returns the reason, so errors.Is sees through a ParseError.
func (e *ParseError) Unwrap() error { return e.Err }

// fieldLabel turns a Field value into the words used in messages: cron
// fields read "minute field", the @every duration reads "@every duration".
func fieldLabel(field string) string {
	switch field {
	case "second", "minute", "hour", "day-of-month", "month", "day-of-week":
		return field + " field"
	case "@every":
		return "@every duration"
	}
	return field
}

// maxQuoted bounds how much offending text a message repeats.
const maxQuoted = 64

// quote quotes s for a message, cutting it short (on a rune boundary) so a
// huge spec cannot make a huge log line.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "..."
}
