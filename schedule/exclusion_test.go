package schedule

import (
	"strings"
	"testing"
	"time"
)

func TestExclusionsMatch(t *testing.T) {
	ny := mustLoc(t, "America/New_York")
	tests := []struct {
		name    string
		entries []string
		loc     *time.Location
		at      string
		want    string // the entry that holds at, "" for none
	}{
		{"range holds its start", []string{"2026-12-24T00:00Z/2026-12-27T00:00Z"}, nil, "2026-12-24T00:00:00Z", "2026-12-24T00:00Z/2026-12-27T00:00Z"},
		{"range ends before its end", []string{"2026-12-24T00:00Z/2026-12-27T00:00Z"}, nil, "2026-12-27T00:00:00Z", ""},
		{"range before its start", []string{"2026-12-24T00:00Z/2026-12-27T00:00Z"}, nil, "2026-12-23T23:59:59Z", ""},
		{"dates read in the zone", []string{"2026-12-24/2026-12-25"}, ny, "2026-12-24T04:59:59Z", ""},
		{"dates read in the zone, inside", []string{"2026-12-24/2026-12-25"}, ny, "2026-12-24T05:00:00Z", "2026-12-24/2026-12-25"},
		{"an offset wins over the zone", []string{"2026-12-24T00:00+01:00/2026-12-24T01:00+01:00"}, ny, "2026-12-23T23:30:00Z", "2026-12-24T00:00+01:00/2026-12-24T01:00+01:00"},
		{"calendar day", []string{"* * 25 12 *"}, nil, "2026-12-25T13:45:10Z", "* * 25 12 *"},
		{"calendar day, the day after", []string{"* * 25 12 *"}, nil, "2026-12-26T00:00:00Z", ""},
		{"calendar in the zone", []string{"* * 25 12 *"}, ny, "2026-12-25T03:00:00Z", ""},
		{"calendar in the zone, inside", []string{"* * 25 12 *"}, ny, "2026-12-26T04:59:00Z", "* * 25 12 *"},
		{"calendar names", []string{"* 0-5 * * sat,sun"}, nil, "2026-12-05T05:59:00Z", "* 0-5 * * sat,sun"},
		{"calendar names, a weekday", []string{"* 0-5 * * sat,sun"}, nil, "2026-12-07T05:59:00Z", ""},
		{"calendar day rule: either day field", []string{"* * 1 * MON"}, nil, "2026-12-07T10:00:00Z", "* * 1 * MON"},
		{"spaces collapsed", []string{"  *  * 25 12  * "}, nil, "2026-12-25T00:00:00Z", "* * 25 12 *"},
		{"second of two", []string{"2026-01-01/2026-01-02", "* * 25 12 *"}, nil, "2026-12-25T00:00:00Z", "* * 25 12 *"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x, err := ParseExclusions(tc.entries, tc.loc)
			if err != nil {
				t.Fatalf("ParseExclusions(%q): %v", tc.entries, err)
			}
			got, ok := x.Match(mustTime(t, tc.at))
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("Match(%s) = %q, %v; want %q", tc.at, got, ok, tc.want)
			}
		})
	}
}

func TestParseExclusionsRefuses(t *testing.T) {
	tests := []struct {
		name    string
		entries []string
		want    string // in the error
	}{
		{"reversed range", []string{"2026-12-27T00:00Z/2026-12-24T00:00Z"}, `exclusion "2026-12-27T00:00Z/2026-12-24T00:00Z": its end 2026-12-24T00:00:00Z is not after its start`},
		{"empty range", []string{"2026-12-24/2026-12-24"}, "is not after its start"},
		{"bad start", []string{"yesterday/2026-12-24"}, `start: "yesterday" is not a time`},
		{"bad end", []string{"2026-12-24/later"}, `end: "later" is not a time`},
		{"overlapping ranges", []string{"2026-12-24/2026-12-27", "2026-12-26/2026-12-28"}, `exclusions "2026-12-24/2026-12-27" and "2026-12-26/2026-12-28" overlap`},
		{"given twice", []string{"* * 25 12 *", "*  * 25 12 *"}, `exclusion "* * 25 12 *" is given twice`},
		{"four fields", []string{"* * 25 12"}, "neither a range FROM/TO nor five cron fields"},
		{"six fields", []string{"0 * * 25 12 *"}, "neither a range FROM/TO nor five cron fields (minute hour day-of-month month day-of-week): 6 fields"},
		{"bad field", []string{"* * 32 12 *"}, "day-of-month field"},
		{"no day", []string{"* * 31 2 *"}, "matches no day"},
		{"empty", []string{" "}, "empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x, err := ParseExclusions(tc.entries, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseExclusions(%q) = %v, %v; want an error containing %q", tc.entries, x, err, tc.want)
			}
		})
	}
	many := make([]string, MaxExclusions+1)
	for i := range many {
		many[i] = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i).Format("2006-01-02") + "/" +
			time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).AddDate(0, 0, i).Format("2006-01-02T15:04")
	}
	if _, err := ParseExclusions(many, nil); err == nil || !strings.Contains(err.Error(), "at most 100") {
		t.Errorf("ParseExclusions(%d entries) = %v; want refused, at most %d", len(many), err, MaxExclusions)
	}
	if _, err := ParseExclusions(many[:MaxExclusions], nil); err != nil {
		t.Errorf("ParseExclusions(%d entries): %v", MaxExclusions, err)
	}
}

// An exclusion of wall times holds the same local hours on both sides of a
// daylight-saving change, and Next passes over exactly the slots it holds.
func TestExclusionsAcrossDST(t *testing.T) {
	ny := mustLoc(t, "America/New_York")
	s := mustParse(t, "0 * * * *", &Options{Location: ny})
	// Nights 00:00-04:00 local, over the weekend of the March 2027 change
	// (2027-03-14 02:00 EST -> 03:00 EDT): the night of the 14th is an
	// hour shorter.
	x, err := ParseExclusions([]string{"* 0-3 13-14 3 *"}, ny)
	if err != nil {
		t.Fatal(err)
	}
	var kept, held []string
	from := time.Date(2027, 3, 13, 0, 0, 0, 0, ny).Add(-time.Second)
	for slot := s.Next(from); slot.Before(time.Date(2027, 3, 14, 6, 0, 0, 0, ny)); slot = s.Next(slot) {
		wall := slot.In(ny).Format("02 15:04 MST")
		if _, ok := x.Match(slot); ok {
			held = append(held, wall)
		} else if slot.In(ny).Hour() < 6 {
			kept = append(kept, wall)
		}
	}
	wantHeld := "13 00:00 EST,13 01:00 EST,13 02:00 EST,13 03:00 EST,14 00:00 EST,14 01:00 EST,14 03:00 EDT"
	if got := strings.Join(held, ","); got != wantHeld {
		t.Errorf("held = %s\nwant   %s", got, wantHeld)
	}
	wantKept := "13 04:00 EST,13 05:00 EST,14 04:00 EDT,14 05:00 EDT"
	if got := strings.Join(kept, ","); got != wantKept {
		t.Errorf("kept = %s\nwant   %s", got, wantKept)
	}
	next := x.Next(s, from, 100)
	if want := time.Date(2027, 3, 13, 4, 0, 0, 0, ny); !next.Equal(want) {
		t.Errorf("Next = %s; want %s", next, want)
	}
}

func TestExclusionsNext(t *testing.T) {
	every := mustParse(t, "* * * * * *", nil)
	x, err := ParseExclusions([]string{"2026-12-24/2026-12-27", "* * 27 12 *"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A secondly job passes four excluded days in a few steps: a range is
	// jumped whole, a calendar entry a minute at a time.
	got := x.Next(every, time.Date(2026, 12, 23, 23, 59, 59, 0, time.UTC), 2000)
	if want := time.Date(2026, 12, 28, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("Next = %s; want %s", got, want)
	}
	if got := x.Next(every, time.Date(2026, 12, 23, 23, 59, 59, 0, time.UTC), 10); !got.IsZero() {
		t.Errorf("Next within 10 steps = %s; want none", got)
	}
	yearly := mustParse(t, "0 0 25 12 *", nil)
	christmas, _ := ParseExclusions([]string{"* * 25 12 *"}, nil)
	if got := christmas.Next(yearly, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 50); !got.IsZero() {
		t.Errorf("Next of a schedule every slot of which is excluded = %s; want none", got)
	}
	var none *Exclusions
	if got, want := none.Next(yearly, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 1), time.Date(2026, 12, 25, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("nil Exclusions: Next = %s; want %s", got, want)
	}
}

// With joins a job's list and a list for all jobs, each read in its own
// zone, and entries of the two may overlap.
func TestExclusionsWith(t *testing.T) {
	lisbon := mustLoc(t, "Europe/Lisbon")
	tokyo := mustLoc(t, "Asia/Tokyo")
	own, err := ParseExclusions([]string{"* 9 * * *", "2026-12-24/2026-12-27"}, lisbon)
	if err != nil {
		t.Fatal(err)
	}
	all, err := ParseExclusions([]string{"* 9 * * *", "2026-12-25/2026-12-26"}, tokyo)
	if err != nil {
		t.Fatal(err)
	}
	both := own.With(all)
	for _, tc := range []struct {
		at   string
		want bool
	}{
		{"2026-06-01T08:30:00Z", true},  // 09:30 in Lisbon (WEST)
		{"2026-06-01T00:30:00Z", true},  // 09:30 in Tokyo
		{"2026-06-01T04:30:00Z", false}, // neither
		{"2026-12-25T12:00:00Z", true},
	} {
		if _, got := both.Match(mustTime(t, tc.at)); got != tc.want {
			t.Errorf("Match(%s) = %v; want %v", tc.at, got, tc.want)
		}
	}
	if both.Len() != 4 || own.Len() != 2 {
		t.Errorf("Len = %d (own %d); want 4 (own 2, unchanged)", both.Len(), own.Len())
	}
	if own.With(nil) != own || (*Exclusions)(nil).With(all) != all {
		t.Error("With an empty list should return the other unchanged")
	}
}
