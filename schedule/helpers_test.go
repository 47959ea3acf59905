package schedule

import (
	"strings"
	"testing"
	"time"

	// The tests name historical zones (Apia 2011, São Paulo 2018); the
	// embedded database makes them pass on machines without
	// /usr/share/zoneinfo. The system database, when present, wins.
	_ "time/tzdata"
)

func mustLoc(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("time.LoadLocation(%q): %v", name, err)
	}
	return loc
}

func mustParse(t testing.TB, spec string, opts *Options) Schedule {
	t.Helper()
	s, err := Parse(spec, opts)
	if err != nil {
		t.Fatalf("Parse(%q): %v", spec, err)
	}
	return s
}

// mustTime parses an RFC 3339 time.
func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("time.Parse(%q): %v", s, err)
	}
	return tm
}

// rfc formats a slot the way the tables write them; the zero time is "-".
func rfc(tm time.Time) string {
	if tm.IsZero() {
		return "-"
	}
	return tm.Format(time.RFC3339)
}

func rfcs(ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, tm := range ts {
		out[i] = rfc(tm)
	}
	return out
}

// nextN returns up to n slots after from, following Next.
func nextN(s Schedule, from time.Time, n int) []time.Time {
	var out []time.Time
	for range n {
		from = s.Next(from)
		if from.IsZero() {
			break
		}
		out = append(out, from)
	}
	return out
}

// prevN returns up to n slots at or before from, following Prev.
func prevN(s Schedule, from time.Time, n int) []time.Time {
	var out []time.Time
	for range n {
		from = s.Prev(from)
		if from.IsZero() {
			break
		}
		out = append(out, from)
		from = from.Add(-time.Nanosecond)
	}
	return out
}

// diffLists describes how two lists of slots differ, or returns "".
func diffLists(got, want []string) string {
	if strings.Join(got, "\n") == strings.Join(want, "\n") {
		return ""
	}
	var b strings.Builder
	for i := range max(len(got), len(want)) {
		g, w := "(none)", "(none)"
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		mark := "  "
		if g != w {
			mark = "!="
		}
		b.WriteString("\n  " + mark + " got " + g + "  want " + w)
	}
	return b.String()
}

func reversed[T any](s []T) []T {
	out := make([]T, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

func timeUnixUTC(sec int64) time.Time { return time.Unix(sec, 0).UTC() }
