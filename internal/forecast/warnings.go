package forecast

import (
	"fmt"
	"strings"
	"time"
)

// Warning is a setting that will surprise the job's operator.
type Warning struct {
	// Code names the check: "never", "rare", "excluded", "lease_ttl",
	// "catch_up" or "jitter".
	Code string
	// Text says what will happen, with the numbers.
	Text string
}

func (w Warning) String() string { return w.Code + ": " + w.Text }

const (
	// Year is the span a forecast looks at: a year, leap day included.
	Year = 366 * 24 * time.Hour
	// rareRuns: a job that runs fewer times a year is likely a spec that
	// does not say what its author meant ("0 0 29 2 *", "0 9 31 * *").
	rareRuns = 4
	// neverSpan is how far a job with no run in a year is looked at
	// before it is said never to run.
	neverSpan = 5 * Year
	// intervalSlots bounds the slots read for the shortest interval, as
	// the scheduler reads them to check a jitter (jitter.go in package
	// cronfence): a year of a daily job, the first two of a secondly one.
	intervalSlots = 1000
)

// Warnings checks j from the instant from: how often it runs in the next
// year, its lease TTL against its timeout, its catch-up against its
// interval, its jitter against its interval and its deadline. year is
// CountSpan(j, from, from+Year), which the caller has already counted.
func Warnings(j Job, from time.Time, year Span) []Warning {
	var out []Warning
	if w, ok := frequency(j, from, year); ok {
		out = append(out, w)
	}
	if j.Timeout > 0 && j.LeaseTTL < j.Timeout && !j.CompletesInTx {
		out = append(out, Warning{Code: "lease_ttl", Text: fmt.Sprintf(
			"lease_ttl %s is shorter than timeout %s: a run renews its lease every %s, but if its replica stalls for %s "+
				"(a paused VM, a cut network) another replica resumes the slot while the first may still be running; "+
				"fence the command's writes and complete the slot with them (completes_in_tx, docs/fencing.md), or raise lease_ttl",
			shortDuration(j.LeaseTTL), shortDuration(j.Timeout), shortDuration(j.LeaseTTL/3), shortDuration(j.LeaseTTL))})
	}
	gap, at := shortestInterval(j, from)
	if j.CatchUp == "all" && gap > 0 && j.CatchUpWindow > gap {
		most, atLeast := mostInWindow(j, from, j.CatchUpWindow)
		replays := fmt.Sprintf("up to %d missed slots run", most)
		if most >= j.MaxCatchUp {
			holds := fmt.Sprint(most)
			if atLeast {
				holds = "at least " + holds
			}
			replays = fmt.Sprintf("%d missed slots run (max_catch_up; a window that long holds %s)", j.MaxCatchUp, holds)
		}
		out = append(out, Warning{Code: "catch_up", Text: fmt.Sprintf(
			"catch_up all with catch_up_window %s, longer than the job's interval of %s: after an outage as long as the window, %s one after another at start-up",
			shortDuration(j.CatchUpWindow), shortDuration(gap), replays)})
	}
	switch {
	case j.Jitter > 0 && j.Deadline > 0 && j.Jitter >= j.Deadline:
		out = append(out, Warning{Code: "jitter", Text: fmt.Sprintf(
			"jitter %s is not below deadline %s, which counts from the slot: serve refuses the job", shortDuration(j.Jitter), shortDuration(j.Deadline))})
	case j.Jitter > 0 && gap > 0 && j.Jitter >= gap:
		out = append(out, Warning{Code: "jitter", Text: fmt.Sprintf(
			"jitter %s is not below the job's shortest interval, %s (from %s): serve refuses the job", shortDuration(j.Jitter), shortDuration(gap), at.Format(time.RFC3339))})
	}
	return out
}

// frequency warns about a job that runs rarely or never.
func frequency(j Job, from time.Time, year Span) (Warning, bool) {
	if year.Runs >= rareRuns || !year.Complete {
		return Warning{}, false
	}
	if year.Runs > 0 {
		return Warning{Code: "rare", Text: fmt.Sprintf("runs %s in the next 366 days: %s%s",
			times(year.Runs), instants(year.FirstRuns), excludedText(year))}, true
	}
	next := j.Exclusions.Next(j.Schedule, from, maxSlotSteps)
	switch {
	case next.IsZero() || next.After(from.Add(neverSpan)):
		why := ""
		switch first := j.Schedule.Next(from); {
		case year.Slots > 0:
			why = " (" + strings.TrimPrefix(excludedText(year), "; ") + ")"
		case first.IsZero():
			why = " (the schedule has no slot left)"
		case first.After(from.Add(neverSpan)):
			why = " (its first slot is " + first.Format(time.RFC3339) + ")"
		}
		return Warning{Code: "never", Text: "no slot runs in the next 5 years" + why}, true
	case year.Slots > 0:
		return Warning{Code: "excluded", Text: fmt.Sprintf("all %d slots of the next 366 days are excluded%s; the next run is %s",
			year.Slots, excludedText(year), next.Format(time.RFC3339))}, true
	default:
		return Warning{Code: "rare", Text: "runs 0 times in the next 366 days; the next run is " + next.Format(time.RFC3339)}, true
	}
}

// excludedText says which exclusions hold slots of sp: `; "* * 25 12 *"
// holds 1`.
func excludedText(sp Span) string {
	var parts []string
	for _, m := range sp.Excluded {
		parts = append(parts, fmt.Sprintf("%q holds %d", m.Entry, m.Count))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, ", ")
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

func instants(ts []time.Time) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.Format(time.RFC3339)
	}
	return strings.Join(s, ", ")
}

// shortestInterval is the shortest time between two consecutive slots of
// j among its next intervalSlots slots within a year of from, with the
// first of the two, as the scheduler finds it for a jitter; zero when
// fewer than two slots come in that year. Exclusions do not count: the
// scheduler's timers and its catch-up walk the schedule's slots.
func shortestInterval(j Job, from time.Time) (time.Duration, time.Time) {
	var shortest time.Duration
	var at time.Time
	end := from.Add(Year)
	prev := j.Schedule.Next(from)
	for i := 0; i < intervalSlots && !prev.IsZero() && prev.Before(end); i++ {
		next := j.Schedule.Next(prev)
		if next.IsZero() {
			break
		}
		if gap := next.Sub(prev); shortest == 0 || gap < shortest {
			shortest, at = gap, prev
		}
		prev = next
	}
	return shortest, at
}

// windowSlots bounds the slots mostInWindow reads: more than
// max_catch_up's limit (10000).
const windowSlots = 20_000

// mostInWindow is the most slots of j that fall in one stretch as long as
// window, (t-window, t], among its slots in the year after from: what an
// outage that long leaves to catch up, at most. atLeast: the slots read
// stopped at windowSlots inside such a stretch, so it holds more.
func mostInWindow(j Job, from time.Time, window time.Duration) (most int, atLeast bool) {
	var slots []time.Time
	end := from.Add(Year)
	for t := j.Schedule.Next(from); !t.IsZero() && t.Before(end) && len(slots) < windowSlots; t = j.Schedule.Next(t) {
		slots = append(slots, t)
	}
	first := 0
	for i, t := range slots {
		for !slots[first].After(t.Add(-window)) {
			first++
		}
		most = max(most, i-first+1)
	}
	return most, len(slots) == windowSlots && most == windowSlots
}
