package forecast

import "strings"

// Kind is how daylight saving treats a schedule (schedule/dst.go).
type Kind int

const (
	// Fixed: the spec names wall-clock times; one in a skipped stretch
	// runs at the change, one in a repeated stretch runs once.
	Fixed Kind = iota
	// Wildcard: "*" starts the minute or the hour field; the job follows
	// real time, a skipped stretch's slots do not exist and a repeated
	// stretch's run twice.
	Wildcard
	// Elapsed: @every counts elapsed time from its anchor; a change
	// moves its wall times, never its slots.
	Elapsed
)

// KindOf classifies a spec by cronie's rule, as package schedule does: a
// wildcard job when its minute or hour field begins with "*" (@hourly is
// "0 * * * *"), a fixed-time job otherwise. The forecast only needs it to
// word a change that both kinds run alike (a skipped stretch whose end the
// spec names too: one run at the change either way); what runs is always
// read from the schedule itself.
func KindOf(spec string) Kind {
	words := strings.Fields(spec)
	if len(words) > 0 && strings.Contains(words[0], "=") { // CRON_TZ=Zone
		words = words[1:]
	}
	if len(words) == 0 {
		return Fixed
	}
	switch strings.ToLower(words[0]) {
	case "@every":
		return Elapsed
	case "@hourly":
		return Wildcard
	}
	if strings.HasPrefix(words[0], "@") {
		return Fixed // the other descriptors are midnight (and minute 0)
	}
	minute, hour := 0, 1
	if len(words) == 6 { // a seconds field first
		minute, hour = 1, 2
	}
	if len(words) <= hour {
		return Fixed
	}
	if strings.HasPrefix(words[minute], "*") || strings.HasPrefix(words[hour], "*") {
		return Wildcard
	}
	return Fixed
}

// bareSpec returns spec without its CRON_TZ= or TZ= prefix.
func bareSpec(spec string) string {
	words := strings.Fields(spec)
	if len(words) > 1 && strings.Contains(words[0], "=") {
		words = words[1:]
	}
	return strings.Join(words, " ")
}
