package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	t.Parallel()
	ny := mustLoc(t, "America/New_York")
	tests := []struct {
		spec  string
		opts  *Options
		str   string // String()
		fixed bool   // a fixed-time job (cron specs only)
		from  string
		next  []string
	}{
		{spec: "*/15 * * * *", str: "*/15 * * * *", from: "2024-01-01T00:07:00Z",
			next: []string{"2024-01-01T00:15:00Z", "2024-01-01T00:30:00Z", "2024-01-01T00:45:00Z"}},
		{spec: "  30\t2  * *   *  ", str: "30 2 * * *", fixed: true, from: "2024-01-01T00:00:00Z",
			next: []string{"2024-01-01T02:30:00Z", "2024-01-02T02:30:00Z"}},
		{spec: "0 30 2 * * *", str: "0 30 2 * * *", fixed: true, from: "2024-01-01T00:00:00Z",
			next: []string{"2024-01-01T02:30:00Z"}},
		{spec: "*/20 * * * * *", str: "*/20 * * * * *", from: "2024-01-01T00:00:00Z",
			next: []string{"2024-01-01T00:00:20Z", "2024-01-01T00:00:40Z", "2024-01-01T00:01:00Z"}},
		{spec: "0 9,17 * * MON-FRI", str: "0 9,17 * * MON-FRI", fixed: true, from: "2024-01-05T12:00:00Z", // a Friday
			next: []string{"2024-01-05T17:00:00Z", "2024-01-08T09:00:00Z"}},
		{spec: "0 9-17 * * *", str: "0 9-17 * * *", fixed: true, from: "2024-01-01T16:30:00Z",
			next: []string{"2024-01-01T17:00:00Z", "2024-01-02T09:00:00Z"}},
		{spec: "CRON_TZ=America/New_York 30 2 * * *", str: "CRON_TZ=America/New_York 30 2 * * *", fixed: true,
			from: "2024-03-09T12:00:00Z", next: []string{"2024-03-10T03:00:00-04:00", "2024-03-11T02:30:00-04:00"}},
		{spec: "TZ=Europe/London 0 12 * * *", str: "TZ=Europe/London 0 12 * * *", fixed: true,
			from: "2024-06-01T00:00:00Z", next: []string{"2024-06-01T12:00:00+01:00"}},
		{spec: "TZ=UTC 0 12 * * *", opts: &Options{Location: ny}, str: "TZ=UTC 0 12 * * *", fixed: true, // the prefix wins
			from: "2024-06-01T00:00:00Z", next: []string{"2024-06-01T12:00:00Z"}},
		{spec: "0 12 * * *", opts: &Options{Location: ny}, str: "0 12 * * *", fixed: true,
			from: "2024-06-01T00:00:00Z", next: []string{"2024-06-01T12:00:00-04:00"}},
		{spec: "@yearly", str: "@yearly", fixed: true, from: "2024-06-01T00:00:00Z", next: []string{"2025-01-01T00:00:00Z"}},
		{spec: "@annually", str: "@annually", fixed: true, from: "2024-06-01T00:00:00Z", next: []string{"2025-01-01T00:00:00Z"}},
		{spec: "@monthly", str: "@monthly", fixed: true, from: "2024-06-01T00:00:00Z", next: []string{"2024-07-01T00:00:00Z"}},
		{spec: "@weekly", str: "@weekly", fixed: true, from: "2024-06-01T00:00:00Z", next: []string{"2024-06-02T00:00:00Z"}},
		{spec: "@daily", str: "@daily", fixed: true, from: "2024-06-01T00:00:00Z", next: []string{"2024-06-02T00:00:00Z"}},
		{spec: "@Midnight", str: "@Midnight", fixed: true, from: "2024-06-01T00:00:00Z", next: []string{"2024-06-02T00:00:00Z"}},
		{spec: "@hourly", str: "@hourly", fixed: false, from: "2024-06-01T00:00:00Z", next: []string{"2024-06-01T01:00:00Z"}},
		{spec: "@every 90m", str: "@every 90m", from: "2024-06-01T00:00:00Z",
			next: []string{"2024-06-01T01:30:00Z", "2024-06-01T03:00:00Z"}},
		{spec: "CRON_TZ=America/New_York @every 1h", str: "CRON_TZ=America/New_York @every 1h", from: "2024-06-01T00:00:00Z",
			next: []string{"2024-05-31T21:00:00-04:00"}},
	}
	for _, tt := range tests {
		s, err := Parse(tt.spec, tt.opts)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.spec, err)
			continue
		}
		if got := s.String(); got != tt.str {
			t.Errorf("Parse(%q).String() = %q, want %q", tt.spec, got, tt.str)
		}
		if c, ok := s.(*cronSchedule); ok && c.spec.fixed != tt.fixed {
			t.Errorf("Parse(%q): fixed-time = %v, want %v", tt.spec, c.spec.fixed, tt.fixed)
		}
		want := tt.next
		if want == nil {
			want = []string{"-"} // no slot: Next returns the zero time
		}
		got := rfcs(nextN(s, mustTime(t, tt.from), len(want)))
		if len(got) == 0 {
			got = []string{rfc(s.Next(mustTime(t, tt.from)))}
		}
		if d := diffLists(got, want); d != "" {
			t.Errorf("Parse(%q): Next from %s:%s", tt.spec, tt.from, d)
		}
		// String is itself a spec meaning the same thing (config hashes rely on it).
		again, err := Parse(s.String(), tt.opts)
		if err != nil {
			t.Errorf("Parse(%q) again: %v", s.String(), err)
		} else if a, b := again.Next(mustTime(t, tt.from)), s.Next(mustTime(t, tt.from)); !a.Equal(b) {
			t.Errorf("Parse(String()) of %q: Next = %s, want %s", tt.spec, rfc(a), rfc(b))
		}
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	long := "0 0 * * *" + strings.Repeat(" ", MaxSpecLen)
	tests := []struct {
		spec string
		opts *Options
		want string
	}{
		{spec: "", want: `schedule: spec "": empty`},
		{spec: " \t ", want: `schedule: spec " \t ": empty`},
		{spec: long, want: `schedule: spec "0 0 * * *                                                       "...: longer than 1024 bytes`},
		{spec: "* * * *", want: `schedule: spec "* * * *": expected 5 fields (minute hour day-of-month month day-of-week) or 6 (a second field first), got 4`},
		{spec: "0 0 0 * * * 2024", want: `schedule: spec "0 0 0 * * * 2024": expected 5 fields (minute hour day-of-month month day-of-week) or 6 (a second field first), got 7`},
		{spec: "0 0 32 * *", want: `schedule: day-of-month field "32": value 32 out of range 1-31`},
		{spec: "60 * * * * *", want: `schedule: second field "60": value 60 out of range 0-59`},
		{spec: "0 24 * * *", want: `schedule: hour field "24": value 24 out of range 0-23`},
		{spec: "0 0 * FOO *", want: `schedule: month field "FOO": "FOO" is not a number or a month name (JAN-DEC)`},
		{spec: "0 0 * * 1#2", want: `schedule: day-of-week field "1#2": "1#2": the L, W and # extensions are not supported`},
		{spec: "CRON_TZ=Mars/Olympus 0 0 * * *", want: `schedule: time zone "Mars/Olympus": unknown time zone Mars/Olympus`},
		{spec: "TZ= 0 0 * * *", want: `schedule: time zone "": empty; name an IANA zone such as Europe/Lisbon`},
		{spec: "TZ=Local 0 0 * * *", want: `schedule: time zone "Local": each machine's local zone may differ; name an IANA zone such as Europe/Lisbon`},
		{spec: "TZ=../../etc/passwd 0 0 * * *", want: `schedule: time zone "../../etc/passwd": time: invalid location name`},
		{spec: "CRON_TZ=UTC", want: `schedule: spec "CRON_TZ=UTC": no schedule after the time zone`},
		{spec: "ZONE=UTC 0 0 * * *", want: `schedule: spec "ZONE=UTC": unknown prefix; the only one accepted is a time zone, CRON_TZ=Zone or TZ=Zone`},
		{spec: "@reboot", want: `schedule: descriptor "@reboot": not supported: a cluster has no one boot to run at; run start-up work from the program itself`},
		{spec: "@fortnightly", want: `schedule: descriptor "@fortnightly": unknown; use @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every <duration>`},
		{spec: "@daily 5", want: `schedule: descriptor "@daily": unexpected text after it: "5"`},
		{spec: "@every", want: `schedule: spec "@every": @every needs a duration, e.g. "@every 1h30m"`},
		{spec: "@every 1h 2h", want: `schedule: spec "@every 1h 2h": @every takes exactly one duration`},
		{spec: "@every soon", want: `schedule: @every duration "soon": time: invalid duration "soon"`},
		{spec: "@every 500ms", want: `schedule: @every duration "500ms": must be at least 1s`},
		{spec: "@every 0s", want: `schedule: @every duration "0s": must be at least 1s`},
		{spec: "@every -1h", want: `schedule: @every duration "-1h": must be at least 1s`},
		{spec: "@every 1.5s", want: `schedule: @every duration "1.5s": must be a whole number of seconds (slots are whole seconds)`},
		{spec: "@every 1m0.001s", want: `schedule: @every duration "1m0.001s": must be a whole number of seconds (slots are whole seconds)`},
		{spec: "@every 1h", opts: &Options{Anchor: time.Unix(0, 5)},
			want: `schedule: Options.Anchor "1970-01-01T00:00:00.000000005Z": must be a whole second`},
		{spec: "0 0 * * *", opts: &Options{Anchor: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
			want: `schedule: Options.Anchor "10000-01-01T00:00:00Z": must lie between the years 1 and 9999`},
	}
	for _, tt := range tests {
		s, err := Parse(tt.spec, tt.opts)
		if err == nil {
			t.Errorf("Parse(%q) = %v, want error %s", tt.spec, s, tt.want)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("Parse(%q):\n got %s\nwant %s", tt.spec, err, tt.want)
		}
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q): error is %T, want *ParseError", tt.spec, err)
		}
	}
}

// The zone error keeps time.LoadLocation's error in its chain.
func TestParseZoneErrorUnwraps(t *testing.T) {
	t.Parallel()
	_, want := time.LoadLocation("Mars/Olympus")
	_, err := Parse("CRON_TZ=Mars/Olympus * * * * *", nil)
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Field != "time zone" || pe.Text != "Mars/Olympus" {
		t.Fatalf("Parse: %v, want a time zone ParseError", err)
	}
	if pe.Unwrap() == nil || pe.Unwrap().Error() != want.Error() {
		t.Errorf("Unwrap() = %v, want %v", pe.Unwrap(), want)
	}
}

// Every descriptor is the expression it stands for.
func TestDescriptorsEqualTheirExpressions(t *testing.T) {
	t.Parallel()
	ny := mustLoc(t, "America/New_York")
	for name, expr := range descriptors {
		d := mustParse(t, name, &Options{Location: ny}).(*cronSchedule)
		e := mustParse(t, expr, &Options{Location: ny}).(*cronSchedule)
		if *d.spec != *e.spec {
			t.Errorf("%s parses differently from %q", name, expr)
		}
		from := mustTime(t, "2024-03-01T00:00:00Z")
		if got, want := rfcs(nextN(d, from, 50)), rfcs(nextN(e, from, 50)); diffLists(got, want) != "" {
			t.Errorf("%s and %q disagree:%s", name, expr, diffLists(got, want))
		}
	}
}

func TestParseDefaults(t *testing.T) {
	t.Parallel()
	for _, opts := range []*Options{nil, {}} {
		s := mustParse(t, "0 12 * * *", opts)
		if got := s.Next(mustTime(t, "2024-06-01T00:00:00Z")); got.Location() != time.UTC {
			t.Errorf("opts %+v: Next is in %v, want UTC", opts, got.Location())
		}
		e := mustParse(t, "@every 7s", opts)
		if got := e.Next(time.Unix(0, 0)); got.Unix() != 7 {
			t.Errorf("opts %+v: @every 7s is not anchored at the Unix epoch: Next(epoch) = %s", opts, rfc(got))
		}
	}
}

// A spec of exactly MaxSpecLen bytes is accepted; padding does not count
// against the field grammar.
func TestParseMaxLength(t *testing.T) {
	t.Parallel()
	spec := "0 0 * * *" + strings.Repeat(" ", MaxSpecLen-len("0 0 * * *"))
	if _, err := Parse(spec, nil); err != nil {
		t.Errorf("Parse(%d bytes): %v", len(spec), err)
	}
	list := "0" + strings.Repeat(",0", (MaxSpecLen-len(" * * * *"))/2-1) + " * * * *"
	if len(list) > MaxSpecLen {
		t.Fatalf("test spec is %d bytes", len(list))
	}
	if _, err := Parse(list, nil); err != nil {
		t.Errorf("Parse(long list): %v", err)
	}
}

// A spec that can never fire is refused, saying why; one that fires rarely
// (February 29, February 29 on a Sunday) or only at the moment the clock
// jumps (a fixed-time job in a daylight-saving gap) is accepted.
func TestParseRefusesSchedulesThatNeverFire(t *testing.T) {
	t.Parallel()
	ny := mustLoc(t, "America/New_York")
	tests := []struct {
		spec string
		loc  *time.Location
		want string // "" when it parses
	}{
		{spec: "0 0 31 2 *", want: `schedule: spec "0 0 31 2 *": never fires: day 31 never falls in February`},
		{spec: "0 0 30 2 *", want: `schedule: spec "0 0 30 2 *": never fires: day 30 never falls in February`},
		{spec: "0 0 30,31 FEB */7", want: `schedule: spec "0 0 30,31 FEB */7": never fires: days 30 and 31 never fall in February`},
		{spec: "0 0 31 4,6,9,11 *", want: `schedule: spec "0 0 31 4,6,9,11 *": never fires: day 31 never falls in April, June, September or November`},
		{spec: "0 0 31 2,4 *", want: `schedule: spec "0 0 31 2,4 *": never fires: day 31 never falls in February or April`},
		{spec: "CRON_TZ=Pacific/Apia 0 0 0 31 2 *", want: `schedule: spec "CRON_TZ=Pacific/Apia 0 0 0 31 2 *": never fires: day 31 never falls in February`},
		// Since 2007 the second Sunday of March is New York's spring
		// forward: 02:00-02:59 does not exist that day, and a wildcard job
		// runs only at wall times that do.
		{spec: "* 2 8-14 3 */7", loc: ny, want: `schedule: spec "* 2 8-14 3 */7": never fires: no time it names from now on exists in America/New_York, each falls where the clock jumps forward (the last slot was 2006-03-12T02:59:00-05:00)`},
		{spec: "0 0 29 2 *"},
		{spec: "0 0 29 2 */7"},
		{spec: "0 0 31 1-2 *"},
		{spec: "0 0 30,31 2 MON"},          // either day field: every Monday of February
		{spec: "30 2 8-14 3 */7", loc: ny}, // fixed-time: runs at 03:00 EDT
		{spec: "* 2 8-14 3 */7"},           // in UTC, no gap
	}
	for _, tt := range tests {
		s, err := Parse(tt.spec, &Options{Location: tt.loc})
		if tt.want == "" {
			if err != nil {
				t.Errorf("Parse(%q): %v, want it accepted", tt.spec, err)
			} else if s.Next(time.Now()).IsZero() {
				t.Errorf("Parse(%q) accepted a schedule with no next slot", tt.spec)
			}
			continue
		}
		var pe *ParseError
		if err == nil {
			t.Errorf("Parse(%q) = %v, want error %s", tt.spec, s, tt.want)
		} else if err.Error() != tt.want || !errors.As(err, &pe) {
			t.Errorf("Parse(%q):\n got %s (%T)\nwant %s", tt.spec, err, err, tt.want)
		}
	}
}
