package schedule

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// MaxExclusions bounds the entries of one list of exclusions: each slot is
// matched against all of them.
const MaxExclusions = 100

// Exclusions are times a job does not run in. Each entry is either a range
// or a calendar entry:
//
//   - a range "FROM/TO" holds the instants at or after FROM and before TO.
//     Each end is an RFC 3339 instant ("2026-12-24T00:00:00Z", seconds
//     optional), or a wall time or a date without a zone
//     ("2026-12-24T08:00", "2026-12-24"), read in the exclusions' zone.
//   - a calendar entry is five cron fields, minute hour day-of-month month
//     day-of-week, with the grammar and the day rule of a spec's: it holds
//     every instant whose wall time in the exclusions' zone matches it, at
//     any second. "* * 25 12 *" is every Christmas Day; "* 0-5 * * SAT,SUN"
//     the weekend nights.
//
// Wall times are read in the zone, so an entry holds the same local hours
// on either side of a daylight-saving change. The zero value and nil
// exclude nothing.
type Exclusions struct {
	ranges    []exclusionRange
	calendars []exclusionCalendar
	loc       *time.Location
}

type exclusionRange struct {
	text     string
	from, to time.Time
}

type exclusionCalendar struct {
	text string
	spec *spec
	loc  *time.Location // nil: the Exclusions' (set when With joins another's)
}

// ParseExclusions parses entries read in loc (UTC when nil). It refuses,
// naming the entry: a range whose end is not after its start, two ranges
// that overlap, a calendar entry that matches no day, an entry given
// twice, and more than MaxExclusions entries.
func ParseExclusions(entries []string, loc *time.Location) (*Exclusions, error) {
	if loc == nil {
		loc = time.UTC
	}
	if len(entries) > MaxExclusions {
		return nil, fmt.Errorf("schedule: %d exclusions; at most %d", len(entries), MaxExclusions)
	}
	x := &Exclusions{loc: loc}
	seen := make(map[string]bool, len(entries))
	for _, raw := range entries {
		text := strings.Join(strings.Fields(raw), " ")
		if seen[text] {
			return nil, fmt.Errorf("schedule: exclusion %s is given twice", quote(text))
		}
		seen[text] = true
		if err := x.add(text, loc); err != nil {
			// A field's *ParseError says "schedule: " itself.
			return nil, fmt.Errorf("schedule: exclusion %s: %s", quote(text), strings.TrimPrefix(err.Error(), "schedule: "))
		}
	}
	slices.SortFunc(x.ranges, func(a, b exclusionRange) int { return a.from.Compare(b.from) })
	for i := 1; i < len(x.ranges); i++ {
		if a, b := x.ranges[i-1], x.ranges[i]; b.from.Before(a.to) {
			return nil, fmt.Errorf("schedule: exclusions %s and %s overlap; merge them into one range", quote(a.text), quote(b.text))
		}
	}
	return x, nil
}

func (x *Exclusions) add(text string, loc *time.Location) error {
	if text == "" {
		return errors.New("empty; write a range FROM/TO or five cron fields")
	}
	if first, last, ok := strings.Cut(text, "/"); ok && !strings.Contains(text, " ") {
		from, err := exclusionTime(first, loc)
		if err != nil {
			return fmt.Errorf("start: %w", err)
		}
		to, err := exclusionTime(last, loc)
		if err != nil {
			return fmt.Errorf("end: %w", err)
		}
		if !to.After(from) {
			return fmt.Errorf("its end %s is not after its start %s", to.Format(time.RFC3339), from.Format(time.RFC3339))
		}
		x.ranges = append(x.ranges, exclusionRange{text: text, from: from, to: to})
		return nil
	}
	words := strings.Fields(text)
	if len(words) != 5 {
		return fmt.Errorf("neither a range FROM/TO nor five cron fields (minute hour day-of-month month day-of-week): %d fields", len(words))
	}
	s, err := parseFields([6]string(append([]string{"*"}, words...)))
	if err != nil {
		return err
	}
	if why := s.neverDays(); why != "" {
		return errors.New("matches no day: " + why)
	}
	x.calendars = append(x.calendars, exclusionCalendar{text: text, spec: s})
	return nil
}

// exclusionLayouts are the forms of a range's end without a zone, read in
// the exclusions' zone.
var exclusionLayouts = []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"}

// exclusionTime parses one end of a range.
func exclusionTime(s string, loc *time.Location) (time.Time, error) {
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	for _, layout := range exclusionLayouts {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%s is not a time such as 2026-12-24T00:00Z, 2026-12-24T08:00 or 2026-12-24", quote(s))
}

// Match reports whether t falls in an exclusion, and which: the entry as
// written (spaces collapsed).
func (x *Exclusions) Match(t time.Time) (entry string, ok bool) {
	entry, _, ok = x.match(t)
	return entry, ok
}

// match is Match, with the instant the entry ends no sooner than: a
// range's end, or the end of a calendar entry's minute.
func (x *Exclusions) match(t time.Time) (entry string, until time.Time, ok bool) {
	if x == nil {
		return "", time.Time{}, false
	}
	for _, r := range x.ranges {
		if !t.Before(r.from) && t.Before(r.to) {
			return r.text, r.to, true
		}
	}
	if len(x.calendars) == 0 {
		return "", time.Time{}, false
	}
	for _, cal := range x.calendars {
		loc := x.loc
		if cal.loc != nil {
			loc = cal.loc
		}
		_, off := t.In(loc).Zone()
		if cal.spec.matches(civilOf(t.Unix() + int64(off))) {
			// Zone offsets are whole minutes: a wall minute is one of UTC's.
			return cal.text, t.Truncate(time.Minute).Add(time.Minute), true
		}
	}
	return "", time.Time{}, false
}

// With returns the exclusions of x and of other together: an instant
// either holds is excluded. Entries of the two may overlap (a job's own
// and a list for all jobs); x's zone reads x's entries, other's other's.
// Either may be nil.
func (x *Exclusions) With(other *Exclusions) *Exclusions {
	switch {
	case other.Len() == 0:
		return x
	case x.Len() == 0:
		return other
	}
	both := &Exclusions{loc: x.loc, ranges: slices.Concat(x.ranges, other.ranges)}
	slices.SortStableFunc(both.ranges, func(a, b exclusionRange) int { return a.from.Compare(b.from) })
	both.calendars = slices.Clone(x.calendars)
	for _, c := range other.calendars {
		if c.loc == nil {
			c.loc = other.loc
		}
		both.calendars = append(both.calendars, c)
	}
	return both
}

// Len is the number of entries.
func (x *Exclusions) Len() int {
	if x == nil {
		return 0
	}
	return len(x.ranges) + len(x.calendars)
}

// Entries returns the entries as written (spaces collapsed): the ranges
// in order of their starts, then the calendar entries.
func (x *Exclusions) Entries() []string {
	if x == nil {
		return nil
	}
	out := make([]string, 0, x.Len())
	for _, r := range x.ranges {
		out = append(out, r.text)
	}
	for _, c := range x.calendars {
		out = append(out, c.text)
	}
	return out
}

// Next returns s's first slot after t that no exclusion holds, or the zero
// time when there is none within limit steps: each step is a slot, or a
// jump past the exclusion that held it (an exclusion may hold every slot
// of a schedule: "0 0 25 12 *" excluded on "* * 25 12 *").
func (x *Exclusions) Next(s Schedule, t time.Time, limit int) time.Time {
	for range limit {
		if t = s.Next(t); t.IsZero() {
			return t
		}
		_, until, excluded := x.match(t)
		if !excluded {
			return t
		}
		// Slots are whole seconds and Next is strictly after: from just
		// before until, until itself is a candidate.
		t = until.Add(-time.Nanosecond)
	}
	return time.Time{}
}
