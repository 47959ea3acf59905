package dashboard

import (
	"fmt"
	"html/template"
	"sync"
	"time"
)

// stamp is one instant as a page shows it: in the job's zone and in UTC,
// with its age against the database clock.
type stamp struct {
	Zero     bool
	ISO      string // RFC 3339, UTC: the <time datetime>
	Zone     string // in the job's zone, with the zone's abbreviation
	UTC      string
	SameZone bool   // the zone is UTC: show one of the two
	Rel      string // "3m ago", "in 5m"; empty without a clock
}

const stampLayout = "2006-01-02 15:04:05 MST"

// at makes a stamp of t in loc, relative to now (skipped when now is zero).
func at(t time.Time, loc *time.Location, now time.Time) stamp {
	if t.IsZero() {
		return stamp{Zero: true}
	}
	if loc == nil {
		loc = time.UTC
	}
	s := stamp{
		ISO:  t.UTC().Format(time.RFC3339Nano),
		Zone: t.In(loc).Format(stampLayout),
		UTC:  t.UTC().Format(stampLayout),
	}
	s.SameZone = s.Zone == s.UTC
	if !now.IsZero() {
		s.Rel = relative(t.Sub(now))
	}
	return s
}

// parseAt is at for the REST API's RFC 3339 strings.
func parseAt(s *string, loc *time.Location, now time.Time) stamp {
	if s == nil {
		return stamp{Zero: true}
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		return stamp{Zone: *s, UTC: *s, SameZone: true}
	}
	return at(t, loc, now)
}

func parseTime(s *string) time.Time {
	if s == nil {
		return time.Time{}
	}
	t, _ := time.Parse(time.RFC3339Nano, *s)
	return t
}

// relative says how far d is from now, coarsely: "in 5m", "3h ago".
func relative(d time.Duration) string {
	future := d > 0
	if d < 0 {
		d = -d
	}
	var s string
	switch {
	case d < time.Second:
		return "now"
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		s = fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	default:
		s = fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// duration formats a run's length for a table.
func duration(d time.Duration) string {
	switch {
	case d < 0:
		return ""
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	default:
		return d.Round(100 * time.Millisecond).String()
	}
}

var zones sync.Map // name → *time.Location

// zone loads a time zone by name, UTC when it cannot be loaded (the job's
// zone was valid where it was registered; this only formats).
func zone(name string) *time.Location {
	if name == "" || name == "UTC" {
		return time.UTC
	}
	if l, ok := zones.Load(name); ok {
		return l.(*time.Location)
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC
	}
	zones.Store(name, l)
	return l
}

var funcs = template.FuncMap{}
