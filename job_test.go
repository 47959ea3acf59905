package cronfence

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestRegisterRefusesTheLocalZone: "Local" is each machine's own zone, so two
// replicas in different zones would compute different slots for one job and
// run it twice. The YAML and CRON_TZ= refuse it; so must the library, with
// the same words, and whatever the spelling of the rest of the job.
func TestRegisterRefusesTheLocalZone(t *testing.T) {
	for _, zone := range []string{"Local"} {
		_, err := Job{Name: "report", Schedule: "0 6 * * *", TimeZone: zone, Handler: noop}.prepare()
		if err == nil {
			t.Fatalf("TimeZone %q: accepted; want it refused", zone)
		}
		for _, want := range []string{`job "report"`, `"Local" differs between machines`, "Europe/Lisbon"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("TimeZone %q: error %q does not say %q", zone, err, want)
			}
		}
	}
	// A CRON_TZ=Local prefix is refused by the schedule's parser already;
	// an IANA zone and the default (UTC) are accepted.
	for _, ok := range []Job{
		{Name: "report", Schedule: "0 6 * * *", TimeZone: "Europe/Lisbon", Handler: noop},
		{Name: "report", Schedule: "0 6 * * *", Handler: noop},
		{Name: "report", Schedule: "0 6 * * *", TimeZone: "UTC", Handler: noop},
	} {
		r, err := ok.prepare()
		if err != nil {
			t.Fatalf("TimeZone %q: %v", ok.TimeZone, err)
		}
		if got := r.sched.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); got.IsZero() {
			t.Fatalf("TimeZone %q: no next slot", ok.TimeZone)
		}
	}
	if _, err := (Job{Name: "report", Schedule: "CRON_TZ=Local 0 6 * * *", Handler: noop}).prepare(); err == nil {
		t.Fatal("CRON_TZ=Local: accepted")
	}
}

func noop(context.Context, *Run) error { return nil }
