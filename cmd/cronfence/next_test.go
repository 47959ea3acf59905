package main

import (
	"strings"
	"testing"
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
