package schedule

import (
	"math/rand/v2"
	"testing"
	"time"
)

// checkCivil compares the integer calendar with the time package on one day.
func checkCivil(t *testing.T, days int64) {
	t.Helper()
	tm := time.Unix(days*secondsPerDay, 0).UTC()
	y, m, d := civilFromDays(days)
	if y != tm.Year() || m != int(tm.Month()) || d != tm.Day() {
		t.Fatalf("civilFromDays(%d) = %d-%d-%d, want %s", days, y, m, d, tm.Format("2006-01-02"))
	}
	if got := daysFromCivil(tm.Year(), int(tm.Month()), tm.Day()); got != days {
		t.Fatalf("daysFromCivil(%s) = %d, want %d", tm.Format("2006-01-02"), got, days)
	}
	if got := weekday(days); got != int(tm.Weekday()) {
		t.Fatalf("weekday(%s) = %d, want %d", tm.Format("2006-01-02"), got, tm.Weekday())
	}
	if got, want := daysIn(y, m), time.Date(y, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day(); got != want {
		t.Fatalf("daysIn(%d, %d) = %d, want %d", y, m, got, want)
	}
}

func TestCivilMatchesTimePackage(t *testing.T) {
	t.Parallel()
	// Every day of 1890-2110, where the tested zones live...
	first := daysFromCivil(1890, 1, 1)
	for days := first; days < first+221*366; days++ {
		checkCivil(t, days)
	}
	// ...the ends of the slot range and both sides of year 0...
	for _, days := range []int64{
		floorDiv(minSlot, secondsPerDay), floorDiv(maxSlot, secondsPerDay),
		daysFromCivil(0, 2, 29), daysFromCivil(0, 3, 1), daysFromCivil(-1, 12, 31),
		daysFromCivil(1, 1, 1), daysFromCivil(10400, 12, 31), -1, 0, 1,
	} {
		checkCivil(t, days)
	}
	// ...and random days across ±5000 years.
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		checkCivil(t, r.Int64N(2*1826250)-1826250-719468)
	}
}

func TestCivilOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		wall string
		want civilTime
	}{
		{"1970-01-01T00:00:00Z", civilTime{1970, 1, 1, 0, 0, 0, 4}},
		{"1969-12-31T23:59:59Z", civilTime{1969, 12, 31, 23, 59, 59, 3}},
		{"2024-02-29T13:14:15Z", civilTime{2024, 2, 29, 13, 14, 15, 4}},
		{"0001-01-01T00:00:00Z", civilTime{1, 1, 1, 0, 0, 0, 1}},
		{"9999-12-31T23:59:59Z", civilTime{9999, 12, 31, 23, 59, 59, 5}},
	}
	for _, tt := range tests {
		w := mustTime(t, tt.wall).Unix()
		if got := civilOf(w); got != tt.want {
			t.Errorf("civilOf(%s) = %+v, want %+v", tt.wall, got, tt.want)
		}
		c := tt.want
		if got := wallSecond(c.year, c.month, c.day, c.hour, c.minute, c.second); got != w {
			t.Errorf("wallSecond(%s) = %d, want %d", tt.wall, got, w)
		}
	}
}

func TestFloorDivMod(t *testing.T) {
	t.Parallel()
	tests := []struct{ a, b, q, r int64 }{
		{7, 2, 3, 1}, {-7, 2, -4, 1}, {-8, 2, -4, 0}, {0, 5, 0, 0}, {-1, 86400, -1, 86399},
	}
	for _, tt := range tests {
		if q, r := floorDiv(tt.a, tt.b), floorMod(tt.a, tt.b); q != tt.q || r != tt.r {
			t.Errorf("floorDiv/Mod(%d, %d) = %d, %d; want %d, %d", tt.a, tt.b, q, r, tt.q, tt.r)
		}
	}
}

func TestSlotRangeConstants(t *testing.T) {
	t.Parallel()
	if want := time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC).Unix(); minSlot != want {
		t.Errorf("minSlot = %d, want %d", minSlot, want)
	}
	if want := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Unix(); maxSlot != want {
		t.Errorf("maxSlot = %d, want %d", maxSlot, want)
	}
}
