package schedule

import (
	"testing"
	"time"
)

var benchCases = []struct {
	name, zone, spec string
}{
	{"every-15-minutes/UTC", "UTC", "*/15 * * * *"},
	{"every-15-minutes/New_York", "America/New_York", "*/15 * * * *"},
	{"daily-fixed/New_York", "America/New_York", "30 2 * * *"},
	{"list-range-fixed/New_York", "America/New_York", "15,45 0-3 * * *"}, // fixed-time, as in cronie
	{"hour-range/London", "Europe/London", "0 9-17 * * *"},
	{"weekdays/London", "Europe/London", "0 9 * * MON-FRI"},
	{"seconds/UTC", "UTC", "*/10 * * * * *"},
	{"leap-day/New_York", "America/New_York", "0 0 29 2 *"},
	{"leap-day-on-sunday/New_York", "America/New_York", "0 0 29 2 */7"}, // up to 40 years away
	{"every-90m/New_York", "America/New_York", "@every 90m"},
}

// benchTimes are the instants asked about: spread over a few years so the
// answers cross daylight-saving transitions now and then.
func benchTimes() []time.Time {
	ts := make([]time.Time, 1024)
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range ts {
		ts[i] = base.Add(time.Duration(i) * 37 * time.Hour).Add(time.Duration(i) * 7 * time.Second)
	}
	return ts
}

func BenchmarkNext(b *testing.B) {
	ts := benchTimes()
	for _, bc := range benchCases {
		b.Run(bc.name, func(b *testing.B) {
			s := mustParse(b, bc.spec, &Options{Location: mustLoc(b, bc.zone)})
			i := 0
			for b.Loop() {
				s.Next(ts[i%len(ts)])
				i++
			}
		})
	}
}

func BenchmarkPrev(b *testing.B) {
	ts := benchTimes()
	for _, bc := range benchCases {
		b.Run(bc.name, func(b *testing.B) {
			s := mustParse(b, bc.spec, &Options{Location: mustLoc(b, bc.zone)})
			i := 0
			for b.Loop() {
				s.Prev(ts[i%len(ts)])
				i++
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	for b.Loop() {
		if _, err := Parse("0 9-17/2 1,15 JAN-JUN MON-FRI", nil); err != nil {
			b.Fatal(err)
		}
	}
}
