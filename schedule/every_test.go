package schedule

import (
	"testing"
	"time"
)

func TestEvery(t *testing.T) {
	t.Parallel()
	ny := mustLoc(t, "America/New_York")
	tests := []struct {
		spec   string
		anchor string // empty: the default, the Unix epoch
		from   string
		want   []string
	}{
		{"@every 1h", "", "2024-01-01T00:30:00Z", []string{"2024-01-01T01:00:00Z", "2024-01-01T02:00:00Z"}},
		{"@every 1h", "", "2024-01-01T01:00:00Z", []string{"2024-01-01T02:00:00Z"}}, // strictly after
		{"@every 7m", "", "1970-01-01T00:00:00Z", []string{"1970-01-01T00:07:00Z", "1970-01-01T00:14:00Z"}},
		{"@every 7m", "", "1969-12-31T23:50:00Z", []string{"1969-12-31T23:53:00Z", "1970-01-01T00:00:00Z"}}, // before the anchor too
		{"@every 1s", "", "2024-01-01T00:00:00.3Z", []string{"2024-01-01T00:00:01Z"}},
		{"@every 90m", "2024-01-01T00:10:00Z", "2024-01-01T00:00:00Z", []string{"2024-01-01T00:10:00Z", "2024-01-01T01:40:00Z"}},
		{"@every 24h", "2024-01-01T09:00:00Z", "2024-06-01T10:00:00Z", []string{"2024-06-02T09:00:00Z"}},
		{"@every 1h30m15s", "2024-01-01T00:00:00Z", "2024-01-01T00:00:00Z", []string{"2024-01-01T01:30:15Z", "2024-01-01T03:00:30Z"}},
		{"@every 2562047h", "", "1970-01-01T00:00:00Z", []string{"2262-04-11T23:00:00Z"}}, // the longest Duration's whole hours
	}
	for _, tt := range tests {
		opts := &Options{}
		if tt.anchor != "" {
			opts.Anchor = mustTime(t, tt.anchor)
		}
		s := mustParse(t, tt.spec, opts)
		got := rfcs(nextN(s, mustTime(t, tt.from), len(tt.want)))
		if d := diffLists(got, tt.want); d != "" {
			t.Errorf("%q anchor %q from %s:%s", tt.spec, tt.anchor, tt.from, d)
			continue
		}
		back := rfcs(prevN(s, mustTime(t, tt.want[len(tt.want)-1]), len(tt.want)))
		if d := diffLists(back, reversed(tt.want)); d != "" {
			t.Errorf("%q Prev back:%s", tt.spec, d)
		}
	}
	// Absolute time: daylight saving does not move it, only how it prints.
	s := mustParse(t, "@every 1h", &Options{Location: ny})
	got := rfcs(nextN(s, mustTime(t, "2024-11-03T04:30:00Z"), 3))
	want := []string{"2024-11-03T01:00:00-04:00", "2024-11-03T01:00:00-05:00", "2024-11-03T02:00:00-05:00"}
	if d := diffLists(got, want); d != "" {
		t.Errorf("@every 1h over the fall-back in New York:%s", d)
	}
}

// Replicas asking at different moments agree, because slots come from
// the anchor, never from the time of asking: anywhere in an interval,
// Next is its end and Prev its start.
func TestEveryIsAnchored(t *testing.T) {
	t.Parallel()
	anchor := mustTime(t, "2024-01-01T00:00:13Z")
	s := mustParse(t, "@every 10m", &Options{Anchor: anchor})
	for k := range 500 {
		start := anchor.Add(time.Duration(k*7919) * 10 * time.Minute)
		for _, off := range []time.Duration{0, time.Nanosecond, time.Second, 5 * time.Minute, 10*time.Minute - time.Nanosecond} {
			at := start.Add(off)
			if got := s.Next(at); !got.Equal(start.Add(10 * time.Minute)) {
				t.Fatalf("Next(%s) = %s, want %s", at, got, start.Add(10*time.Minute))
			}
			if got := s.Prev(at); !got.Equal(start) {
				t.Fatalf("Prev(%s) = %s, want %s", at, got, start)
			}
		}
	}
}
