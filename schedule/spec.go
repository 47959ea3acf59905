package schedule

import (
	"strconv"
	"strings"
)

// spec is a parsed cron expression: which wall-clock times match. It knows
// nothing of time zones; cron.go turns matching wall times into instants.
type spec struct {
	second, minute, hour, dom, month, dow bitset

	// domStar and dowStar record that the day-of-month and day-of-week
	// fields were written starting with "*" (or as "?"). Vixie cron's day
	// rule: if either is starred, a day must match both fields (so a plain
	// "*" leaves the other field alone to decide); if neither is, a day
	// matching either field is enough. "0 0 1,15 * MON" runs on the 1st,
	// the 15th and every Monday; "0 0 */2 * MON" only on Mondays that fall
	// on odd days of the month, because "*/2" starts with "*".
	domStar, dowStar bool

	// fixed marks a fixed-time job, cronie's rule: neither the minute nor
	// the hour field is written starting with "*" (dst.go). Such jobs get
	// cronie's daylight-saving adjustments; the seconds field plays no part.
	fixed bool

	// dowDays[w] is the set of days of the month (bits 1..31) whose day of
	// the week is in dow, for a month whose first day is weekday w.
	dowDays [7]bitset
}

func newSpec(f [6]parsedField) *spec {
	s := &spec{
		second: f[fieldSecond].set, minute: f[fieldMinute].set, hour: f[fieldHour].set,
		dom: f[fieldDayOfMonth].set, month: f[fieldMonth].set, dow: f[fieldDayOfWeek].set,
		domStar: f[fieldDayOfMonth].star, dowStar: f[fieldDayOfWeek].star,
		fixed: !f[fieldMinute].star && !f[fieldHour].star,
	}
	for first := range 7 {
		for d := 1; d <= 31; d++ {
			if s.dow.has((first + d - 1) % 7) {
				s.dowDays[first] |= 1 << uint(d)
			}
		}
	}
	return s
}

// andDays reports whether a day must match both day fields (true) or
// either of them (false).
func (s *spec) andDays() bool { return s.domStar || s.dowStar }

// dayMatches is the day rule applied to one date; the search uses the
// faster dayMask, tests check one against the other.
func (s *spec) dayMatches(c civilTime) bool {
	if !s.month.has(c.month) {
		return false
	}
	dom, dow := s.dom.has(c.day), s.dow.has(c.weekday)
	if s.andDays() {
		return dom && dow
	}
	return dom || dow
}

// matches reports whether a wall-clock time matches every field.
func (s *spec) matches(c civilTime) bool {
	return s.dayMatches(c) && s.hour.has(c.hour) && s.minute.has(c.minute) && s.second.has(c.second)
}

// dayMask returns the days of month m of year y (bits 1..31) on which the
// job runs, taking the month field into account.
func (s *spec) dayMask(y, m int) bitset {
	if !s.month.has(m) {
		return 0
	}
	valid := span(1, daysIn(y, m))
	dows := s.dowDays[weekday(daysFromCivil(y, m, 1))]
	if s.andDays() {
		return s.dom & dows & valid
	}
	return (s.dom | dows) & valid
}

// neverDays says why no day ever matches, or "" when some day does. Under
// the "either" rule some weekday always does. Under the "both" rule a
// (month, day) pair that exists (February 29 counts) is needed: every such
// date falls on every day of the week within the 400-year Gregorian cycle.
// Without one, the days written are all past the end of every month
// written: "day 31 never falls in April, June, September or November".
func (s *spec) neverDays() string {
	if !s.andDays() {
		return ""
	}
	var months []string
	for m := 1; m <= 12; m++ {
		if !s.month.has(m) {
			continue
		}
		if s.dom&span(1, daysIn(2000, m)) != 0 {
			return ""
		}
		months = append(months, monthNames[m-1])
	}
	var days []string
	for d := 1; d <= 31; d++ {
		if s.dom.has(d) {
			days = append(days, strconv.Itoa(d))
		}
	}
	if len(days) == 1 {
		return "day " + days[0] + " never falls in " + orList(months)
	}
	return "days " + andList(days) + " never fall in " + orList(months)
}

var monthNames = [12]string{"January", "February", "March", "April", "May", "June",
	"July", "August", "September", "October", "November", "December"}

// orList joins "a, b or c"; andList "a, b and c".
func orList(xs []string) string  { return joinLast(xs, " or ") }
func andList(xs []string) string { return joinLast(xs, " and ") }

func joinLast(xs []string, last string) string {
	if len(xs) == 1 {
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + last + xs[len(xs)-1]
}
