package schedule_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/cronfence/cronfence/schedule"
)

func mustLoad(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

// A schedule is parsed once, with the job's time zone, and asked for the
// slots after a moment.
func ExampleParse() {
	s, err := schedule.Parse("0 9 * * MON-FRI", &schedule.Options{Location: mustLoad("Europe/Lisbon")})
	if err != nil {
		panic(err)
	}
	t := time.Date(2024, 6, 7, 12, 0, 0, 0, time.UTC) // a Friday
	for range 3 {
		t = s.Next(t)
		fmt.Println(t.Format(time.RFC3339), t.Weekday())
	}
	// Output:
	// 2024-06-10T09:00:00+01:00 Monday
	// 2024-06-11T09:00:00+01:00 Tuesday
	// 2024-06-12T09:00:00+01:00 Wednesday
}

// When the clock jumps from 02:00 to 03:00, a job fixed at 02:30 runs once,
// at the moment of the change, as cronie runs it.
func ExampleParse_springForward() {
	s, _ := schedule.Parse("30 2 * * *", &schedule.Options{Location: mustLoad("America/New_York")})
	t := time.Date(2024, 3, 9, 12, 0, 0, 0, time.UTC)
	for range 2 {
		t = s.Next(t)
		fmt.Println(t.Format(time.RFC3339))
	}
	// Output:
	// 2024-03-10T03:00:00-04:00
	// 2024-03-11T02:30:00-04:00
}

// When the clock goes back from 02:00 to 01:00, a job fixed at 01:30 runs
// only the first time, while a job with "*" in its minute field follows real
// time and runs in both occurrences of the hour.
func ExampleParse_fallBack() {
	ny := mustLoad("America/New_York")
	fixed, _ := schedule.Parse("30 1 * * *", &schedule.Options{Location: ny})
	wild, _ := schedule.Parse("*/30 1 * * *", &schedule.Options{Location: ny})
	from := time.Date(2024, 11, 3, 0, 0, 0, 0, ny)
	fmt.Println("fixed:", fixed.Next(from).Format(time.RFC3339), fixed.Next(fixed.Next(from)).Format(time.RFC3339))
	for t := wild.Next(from); t.Day() == 3; t = wild.Next(t) {
		fmt.Println("wild: ", t.Format(time.RFC3339))
	}
	// Output:
	// fixed: 2024-11-03T01:30:00-04:00 2024-11-04T01:30:00-05:00
	// wild:  2024-11-03T01:00:00-04:00
	// wild:  2024-11-03T01:30:00-04:00
	// wild:  2024-11-03T01:00:00-05:00
	// wild:  2024-11-03T01:30:00-05:00
}

// @every slots are anchored, so every replica computes the same instants
// whenever it asks; the default anchor is the Unix epoch.
func ExampleParse_every() {
	s, _ := schedule.Parse("@every 90m", &schedule.Options{Anchor: time.Date(2024, 1, 1, 0, 10, 0, 0, time.UTC)})
	for _, asked := range []string{"2024-06-01T12:10:01Z", "2024-06-01T13:39:59Z"} {
		t, _ := time.Parse(time.RFC3339, asked)
		fmt.Println(asked, "->", s.Next(t).Format(time.RFC3339))
	}
	// Output:
	// 2024-06-01T12:10:01Z -> 2024-06-01T13:40:00Z
	// 2024-06-01T13:39:59Z -> 2024-06-01T13:40:00Z
}

// Catch-up after a restart looks for the most recent slot with Prev.
func ExampleSchedule_prev() {
	s, _ := schedule.Parse("0 0 * * *", &schedule.Options{Location: mustLoad("America/Sao_Paulo")})
	restartedAt := time.Date(2018, 11, 4, 9, 0, 0, 0, time.UTC)
	// Midnight did not exist that day in São Paulo: the daily slot was 01:00.
	fmt.Println(s.Prev(restartedAt).Format(time.RFC3339))
	// Output:
	// 2018-11-04T01:00:00-02:00
}

// A bad spec says which field is wrong and why.
func ExampleParseError() {
	_, err := schedule.Parse("0 0 32 * *", nil)
	fmt.Println(err)
	var pe *schedule.ParseError
	if errors.As(err, &pe) {
		fmt.Printf("field %s, text %q\n", pe.Field, pe.Text)
	}
	// Output:
	// schedule: day-of-month field "32": value 32 out of range 1-31
	// field day-of-month, text "32"
}
