package service

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
)

// A failure that goes on is logged at its first occurrence, then once a
// minute with how many times it failed since its last line and since
// when; once it succeeds again, its next failure is logged at once.
func TestFailuresOnceThenEveryMinute(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	log := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	c := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	var f Failures
	fail := func() {
		f.Failed(log, c.Now(), slog.LevelWarn, "cronfence: could not read the database clock", "error", "refused")
	}
	for range 130 { // a failure a second for 130 s
		fail()
		c.Advance(time.Second)
	}
	f.Over("cronfence: could not read the database clock")
	fail()
	want := `level=WARN msg="cronfence: could not read the database clock" error=refused
level=WARN msg="cronfence: could not read the database clock" error=refused repeated=60 failing_since=2026-03-01T12:00:00.000Z
level=WARN msg="cronfence: could not read the database clock" error=refused repeated=60 failing_since=2026-03-01T12:00:00.000Z
level=WARN msg="cronfence: could not read the database clock" error=refused
`
	if got := out.String(); got != want {
		t.Fatalf("logged:\n%s\nwant:\n%s", got, want)
	}
}
