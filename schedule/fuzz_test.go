package schedule

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

var fuzzLocs = sync.OnceValue(func() []*time.Location {
	var locs []*time.Location
	for _, z := range []string{"UTC", "America/New_York", "Australia/Lord_Howe", "Pacific/Apia", "America/Sao_Paulo", "Antarctica/Troll"} {
		loc, err := time.LoadLocation(z)
		if err != nil {
			panic(err)
		}
		locs = append(locs, loc)
	}
	return locs
})

// fuzzSpan is the range of instants the fuzzer asks about: the slot range
// and a few hundred years either side of it.
const fuzzSpan = maxSlot - minSlot + 2*400*366*secondsPerDay

// FuzzParse feeds arbitrary specs to Parse and, when they parse, checks
// Next and Prev on the result: no panic, no call slower than a generous
// bound, the invariants of checkInvariants, and String giving back a spec
// that means the same. Errors must be *ParseError and say so.
func FuzzParse(f *testing.F) {
	for i, spec := range []string{
		"* * * * *", "*/15 * * * *", "0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 29 2 */7", "59 59 23 31 12 *",
		"30 2 * * *", "30 1 * * *", "0,30 2 * * *", "0 1-3 * * *", "*/20 * * * * *", "0 0 1,15 * MON",
		"0 0 */2 * MON", "0 0 ? * ?", "? * * * *", "0 0 * * 7", "0 0 * * 0-7/2", "0 0 * JAN-DEC/5 SUN-SAT",
		"CRON_TZ=Pacific/Apia 0 0 * * *", "TZ=America/Sao_Paulo 0 0 * * *", "TZ= * * * * *", "CRON_TZ=Local * * * * *",
		"TZ=../../etc/passwd * * * * *", "FOO=bar * * * * *", "=", "@every 1s", "@every 2562047h47m16s",
		"@every 1.5s", "@every -1s", "@EVERY 1h", "@reboot", "@daily", "@hourly 1", "@", "", " ", "\x00",
		"*/0 * * * *", "1-2-3 * * * *", "5/ * * * *", "* * * * * * *", "L * * * *", "0 0 L * *", "0 0 1W * *",
		"0 0 * * 5#3", "99999999999999999999 * * * *", "0\u00a00 * * *", "-1 * * * *", "1,,2 * * * *",
		"0 0 1 1 *", "0 0-23/7 */3 */2 */4", strings.Repeat("1,", 400) + "1 * * * *",
	} {
		f.Add(spec, int64(i)*987654321987, uint8(i))
	}
	// December 31 of a leap year past New York's listed transitions, where
	// time.ZoneBounds reports a period that ends before the instant
	// (golang/go#81583); Next used to give up there.
	f.Add("0 9 * * *", time.Date(2072, 12, 31, 15, 0, 0, 0, time.UTC).Unix()-(minSlot-400*366*secondsPerDay), uint8(1))
	f.Fuzz(func(t *testing.T, spec string, at int64, zone uint8) {
		locs := fuzzLocs()
		loc := locs[int(zone)%len(locs)]
		opts := &Options{Location: loc, Anchor: time.Unix(at%1e11, 0)}
		start := time.Now()
		s, err := Parse(spec, opts)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "schedule: ") {
				t.Fatalf("Parse(%q): error %q (%T) is not a ParseError", spec, err, err)
			}
			return
		}
		when := time.Unix(minSlot-400*366*secondsPerDay+floorMod(at, fuzzSpan), floorMod(at, 1e9))
		if err := checkInvariants(s, locationOf(s), when); err != nil {
			t.Fatal(err)
		}
		again, err := Parse(s.String(), opts)
		if err != nil {
			t.Fatalf("Parse(%q) parses but its String %q does not: %v", spec, s.String(), err)
		}
		if a, b := again.Next(when), s.Next(when); !a.Equal(b) {
			t.Fatalf("%q and its String %q disagree: Next = %s and %s", spec, s.String(), rfc(b), rfc(a))
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("%q at %s took %v", spec, when, d)
		}
	})
}

// locationOf returns the zone a schedule answers in (a CRON_TZ= prefix
// may have replaced Options.Location).
func locationOf(s Schedule) *time.Location {
	switch s := s.(type) {
	case *cronSchedule:
		return s.loc
	case *everySchedule:
		return s.loc
	}
	panic("unknown Schedule type")
}
