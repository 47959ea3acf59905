package schedule

// Civil (wall-clock) arithmetic on the proleptic Gregorian calendar, free of
// any time zone. The search works on "wall seconds": a civil date and time
// counted in seconds from 1970-01-01 00:00:00 as if it were UTC. An instant x
// whose zone offset is o has wall second x+o.
//
// time.Date could do these conversions, but the search calls them in its
// inner loop; these integer versions (Howard Hinnant's days_from_civil and
// civil_from_days) cost a few nanoseconds and never allocate.

const secondsPerDay = 24 * 60 * 60

// daysFromCivil returns the number of days from 1970-01-01 to y-m-d.
func daysFromCivil(y, m, d int) int64 {
	yy := int64(y)
	if m <= 2 {
		yy-- // count March as the first month so that the leap day ends the year
	}
	era := floorDiv(yy, 400)
	yoe := yy - era*400 // [0, 399]
	mp := int64(m+9) % 12
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy // [0, 146096]
	return era*146097 + doe - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(days int64) (y, m, d int) {
	z := days + 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	m = int((mp+2)%12) + 1
	yy := yoe + era*400
	if m <= 2 {
		yy++
	}
	return int(yy), m, d
}

// weekday returns the day of the week of a day count, 0 = Sunday.
func weekday(days int64) int {
	// 1970-01-01 was a Thursday.
	return int(floorMod(days+4, 7))
}

func isLeap(y int) bool {
	return y%4 == 0 && (y%100 != 0 || y%400 == 0)
}

// daysIn returns the number of days in month m of year y.
func daysIn(y, m int) int {
	switch m {
	case 2:
		if isLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// wallSecond returns the wall second of a civil date and time.
func wallSecond(y, m, d, hh, mm, ss int) int64 {
	return daysFromCivil(y, m, d)*secondsPerDay + int64(hh*3600+mm*60+ss)
}

// civilTime is a wall second broken into its fields.
type civilTime struct {
	year, month, day     int
	hour, minute, second int
	weekday              int // 0 = Sunday
}

func civilOf(wall int64) civilTime {
	days := floorDiv(wall, secondsPerDay)
	sod := int(wall - days*secondsPerDay)
	y, m, d := civilFromDays(days)
	return civilTime{
		year: y, month: m, day: d,
		hour: sod / 3600, minute: sod / 60 % 60, second: sod % 60,
		weekday: weekday(days),
	}
}

// floorDiv divides rounding towards negative infinity; b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// floorMod is the remainder of floorDiv, in [0, b).
func floorMod(a, b int64) int64 {
	r := a % b
	if r < 0 {
		r += b
	}
	return r
}
