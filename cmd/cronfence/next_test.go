package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/jitter"
)

func TestNextSpringForward(t *testing.T) {
	t.Parallel()
	code, out, errOut := runCLI(t, t.TempDir(), "next", "30 2 * * *", "--tz", "America/New_York", "--from", "2024-03-09T12:00:00Z", "--count", "3")
	want := "2024-03-10T03:00:00-04:00\n2024-03-11T02:30:00-04:00\n2024-03-12T02:30:00-04:00\n"
	if code != 0 || out != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", code, out, want, errOut)
	}
}

func TestNextZonePrefixAndDefaults(t *testing.T) {
	t.Parallel()
	code, out, errOut := runCLI(t, t.TempDir(), "next", "CRON_TZ=Europe/Lisbon 0 9 * * MON", "--from", "2026-03-28T00:00:00Z", "-n", "2")
	want := "2026-03-30T09:00:00+01:00\n2026-04-06T09:00:00+01:00\n"
	if code != 0 || out != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", code, out, want, errOut)
	}
	code, out, _ = runCLI(t, t.TempDir(), "next", "@every 1h")
	if code != 0 || strings.Count(out, "\n") != 5 || !strings.Contains(out, ":00:00Z") {
		t.Fatalf("exit %d, stdout:\n%s\nwant five UTC hours from now", code, out)
	}
}

// A spec that never fires is refused with the reason; one that fires every
// four years lists its slots.
func TestNextRefusesAScheduleThatNeverFires(t *testing.T) {
	t.Parallel()
	code, out, errOut := runCLI(t, t.TempDir(), "next", "0 0 31 2 *")
	want := `cronfence: schedule: spec "0 0 31 2 *": never fires: day 31 never falls in February` + "\n"
	if code != exitUsage || out != "" || errOut != want {
		t.Fatalf("exit %d stdout %q stderr %q; want exit 2 and %q", code, out, errOut, want)
	}
	code, out, errOut = runCLI(t, t.TempDir(), "next", "0 0 29 2 *", "--from", "2025-01-01T00:00:00Z", "-n", "2")
	if want := "2028-02-29T00:00:00Z\n2032-02-29T00:00:00Z\n"; code != 0 || out != want {
		t.Fatalf("exit %d stdout %q stderr %q; want %q", code, out, errOut, want)
	}
}

func TestNextErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad spec", []string{"next", "61 * * * *"}, `minute field "61"`},
		{"too few fields", []string{"next", "* * *"}, "expected 5 fields"},
		{"bad zone", []string{"next", "* * * * *", "--tz", "Mars/Olympus"}, `--tz "Mars/Olympus": unknown time zone`},
		{"local zone", []string{"next", "* * * * *", "--tz", "Local"}, "name an IANA zone"},
		{"bad from", []string{"next", "* * * * *", "--from", "yesterday"}, `--from "yesterday": not an RFC 3339 instant`},
		{"bad count", []string{"next", "* * * * *", "--count", "0"}, "--count must be between 1 and"},
		{"no spec", []string{"next"}, "expected \"<spec>\""},
		{"unknown flag", []string{"next", "* * * * *", "--bogus"}, "unknown flag --bogus"},
		{"unknown command", []string{"frobnicate"}, "unexpected argument frobnicate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runCLI(t, t.TempDir(), tt.args...)
			if code != exitUsage || out != "" || !strings.Contains(errOut, tt.want) || !strings.HasPrefix(errOut, "cronfence: ") {
				t.Fatalf("exit %d stdout %q stderr %q; want exit 2 and %q", code, out, errOut, tt.want)
			}
		})
	}
}

// --explain says why the first slot is at 03:00: the 02:30 the spec names
// does not exist on 14 March, and a fixed-time job runs at the change.
func TestNextExplainSpringForward(t *testing.T) {
	t.Parallel()
	code, out, errOut := runCLI(t, t.TempDir(), "next", "30 2 * * *", "--tz", "America/New_York", "--from", "2027-03-13T12:00:00Z", "-n", "2", "--explain")
	want := `spec "30 2 * * *" in America/New_York
2027-03-14T03:00:00-04:00  Sun 2027-03-14 03:00:00 EDT
  daylight saving: moved here from 02:30 (02:00–02:59 does not exist that day)
2027-03-15T02:30:00-04:00  Mon 2027-03-15 02:30:00 EDT

Changes of UTC offset in America/New_York from 2027-03-13 to 2028-03-13:
  2027-03-14 02:00 EST → 03:00 EDT (clocks forward 1h): the 02:30 run moves to 03:00 EDT
  2027-11-07 02:00 EDT → 01:00 EST (clocks back 1h): no effect: the job names no time in the repeated 01:00–01:59
  2028-03-12 02:00 EST → 03:00 EDT (clocks forward 1h): the 02:30 run moves to 03:00 EDT
`
	if code != 0 || out != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", code, out, want, errOut)
	}
}

// The argument may name a job of --config: its zone and jitter apply, and
// --explain shows each run's start, the delay every replica derives
// (jitter.Delay with the job's following slot).
func TestNextJobOfConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "cronfence.yaml")
	writeTestFile(t, path, `
jobs:
  - name: report
    schedule: "0 * * * *"
    time_zone: Europe/Lisbon
    jitter: 10m
    shell: "true"
`)
	from := "2027-10-31T00:30:00Z" // 01:30 WEST
	code, out, errOut := runCLI(t, dir, "next", "report", "--config", path, "--from", from, "-n", "3")
	// The Lisbon clock goes back at 01:00Z: 01:00 WET, the second 01:00,
	// is 01:00Z.
	want := "2027-10-31T01:00:00Z\n2027-10-31T02:00:00Z\n2027-10-31T03:00:00Z\n"
	if code != 0 || out != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", code, out, want, errOut)
	}

	code, out, errOut = runCLI(t, dir, "next", "report", "--config", path, "--from", "2027-10-30T23:30:00Z", "-n", "3", "--explain")
	var b strings.Builder
	b.WriteString(`job report of ` + path + `: "0 * * * *" in Europe/Lisbon, jitter 10m0s` + "\n")
	lisbon, err := time.LoadLocation("Europe/Lisbon")
	if err != nil {
		t.Fatal(err)
	}
	notes := []string{
		"first pass of the repeated 01:00–01:59 (WEST); runs again in WET",
		"second pass of the repeated 01:00–01:59 (WET)",
		"",
	}
	for i, slot := range []string{"2027-10-31T00:00:00Z", "2027-10-31T01:00:00Z", "2027-10-31T02:00:00Z"} {
		at, _ := time.Parse(time.RFC3339, slot)
		at = at.In(lisbon)
		d := jitter.Delay("report", 10*time.Minute, at, at.Add(time.Hour)).Truncate(time.Millisecond)
		fmt.Fprintf(&b, "%s  %s  starts +%s at %s\n", at.Format(time.RFC3339), at.Format("Mon 2006-01-02 15:04:05 MST"),
			d, at.Add(d).Format("15:04:05.000 MST"))
		if notes[i] != "" {
			b.WriteString("  daylight saving: " + notes[i] + "\n")
		}
	}
	if code != 0 || !strings.HasPrefix(out, b.String()) {
		t.Fatalf("exit %d, stdout:\n%s\nwant it to start with:\n%s\nstderr: %s", code, out, b.String(), errOut)
	}
	if want := "  2027-10-31 02:00 WEST → 01:00 WET (clocks back 1h): the 01:00 run happens twice: at 01:00 WEST and again at 01:00 WET\n"; !strings.Contains(out, want) {
		t.Errorf("stdout lacks %q:\n%s", want, out)
	}

	// A spec still works with --config; a name that is neither is refused.
	code, out, _ = runCLI(t, dir, "next", "@daily", "--config", path, "--from", from, "-n", "1")
	if code != 0 || out != "2027-11-01T00:00:00Z\n" {
		t.Errorf("a spec with --config: exit %d, stdout %q", code, out)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"next", "reprot", "--config", path}, `"reprot" is neither a job of ` + path + ` nor a valid spec`},
		{[]string{"next", "report", "--config", path, "--tz", "America/New_York"}, `--tz "America/New_York": job report of ` + path + ` has its own zone, Europe/Lisbon`},
	} {
		code, out, errOut := runCLI(t, dir, tt.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, tt.want) {
			t.Errorf("%q: exit %d stdout %q stderr %q; want exit 2 and %q", tt.args, code, out, errOut, tt.want)
		}
	}
}
