package schedule

import (
	"errors"
	"slices"
	"testing"
)

// values lists the members of a set in order.
func values(b bitset) []int {
	var out []int
	for v := range 64 {
		if b.has(v) {
			out = append(out, v)
		}
	}
	return out
}

func seq(lo, hi, step int) []int {
	var out []int
	for v := lo; v <= hi; v += step {
		out = append(out, v)
	}
	return out
}

func TestParseField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		field field
		text  string
		want  []int
		star  bool
	}{
		{fieldMinute, "*", seq(0, 59, 1), true},
		{fieldMinute, "0", []int{0}, false},
		{fieldMinute, "59", []int{59}, false},
		{fieldMinute, "007", []int{7}, false},
		{fieldMinute, "0,30", []int{0, 30}, false},
		{fieldMinute, "30,0,30", []int{0, 30}, false},
		{fieldMinute, "*/15", []int{0, 15, 30, 45}, true},
		{fieldMinute, "*/60", []int{0}, true},
		{fieldMinute, "5/20", []int{5, 25, 45}, false},
		{fieldMinute, "10-20", seq(10, 20, 1), false},
		{fieldMinute, "10-20/5", []int{10, 15, 20}, false},
		{fieldMinute, "10-10", []int{10}, false},
		{fieldMinute, "1,10-20/5,59", []int{1, 10, 15, 20, 59}, false},
		{fieldMinute, "5,*/30", []int{0, 5, 30}, false}, // the text's first character decides
		{fieldMinute, "*/30,5", []int{0, 5, 30}, true},
		{fieldSecond, "*/20", []int{0, 20, 40}, true},
		{fieldHour, "*/6", []int{0, 6, 12, 18}, true},
		{fieldHour, "9-17", seq(9, 17, 1), false},
		{fieldHour, "23", []int{23}, false},
		{fieldDayOfMonth, "*", seq(1, 31, 1), true},
		{fieldDayOfMonth, "?", seq(1, 31, 1), true},
		{fieldDayOfMonth, "*/2", seq(1, 31, 2), true},
		{fieldDayOfMonth, "1,15", []int{1, 15}, false},
		{fieldDayOfMonth, "31", []int{31}, false},
		{fieldMonth, "*", seq(1, 12, 1), true},
		{fieldMonth, "JAN", []int{1}, false},
		{fieldMonth, "dec", []int{12}, false},
		{fieldMonth, "Jan-Mar", []int{1, 2, 3}, false},
		{fieldMonth, "JAN-DEC/3", []int{1, 4, 7, 10}, false},
		{fieldMonth, "*/4", []int{1, 5, 9}, true},
		{fieldMonth, "2/5", []int{2, 7, 12}, false},
		{fieldDayOfWeek, "*", seq(0, 6, 1), true},
		{fieldDayOfWeek, "?", seq(0, 6, 1), true},
		{fieldDayOfWeek, "0", []int{0}, false},
		{fieldDayOfWeek, "7", []int{0}, false}, // 7 is Sunday too
		{fieldDayOfWeek, "0,7", []int{0}, false},
		{fieldDayOfWeek, "MON-FRI", []int{1, 2, 3, 4, 5}, false},
		{fieldDayOfWeek, "sun,sat", []int{0, 6}, false},
		{fieldDayOfWeek, "5-7", []int{0, 5, 6}, false},
		{fieldDayOfWeek, "0-7", seq(0, 6, 1), false},
		{fieldDayOfWeek, "*/2", []int{0, 2, 4, 6}, true}, // not Sunday twice
		{fieldDayOfWeek, "1/2", []int{1, 3, 5}, false},   // a/n stops at 6
		{fieldDayOfWeek, "7/3", []int{0, 3, 6}, false},   // 7/n starts at Sunday
		{fieldDayOfWeek, "1-7/2", []int{0, 1, 3, 5}, false},
		{fieldDayOfWeek, "*/7", []int{0}, true},
	}
	for _, tt := range tests {
		got, err := parseField(tt.field, tt.text)
		if err != nil {
			t.Errorf("%s %q: %v", fieldDefs[tt.field].name, tt.text, err)
			continue
		}
		if !slices.Equal(values(got.set), tt.want) || got.star != tt.star {
			t.Errorf("%s %q = %v star=%v; want %v star=%v", fieldDefs[tt.field].name, tt.text,
				values(got.set), got.star, tt.want, tt.star)
		}
	}
}

func TestParseFieldErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		field field
		text  string
		want  string
	}{
		{fieldDayOfMonth, "32", `schedule: day-of-month field "32": value 32 out of range 1-31`},
		{fieldDayOfMonth, "0", `schedule: day-of-month field "0": value 0 out of range 1-31`},
		{fieldMinute, "60", `schedule: minute field "60": value 60 out of range 0-59`},
		{fieldSecond, "99999999999999999999", `schedule: second field "99999999999999999999": value 99999999999999999999 out of range 0-59`},
		{fieldHour, "24", `schedule: hour field "24": value 24 out of range 0-23`},
		{fieldMonth, "13", `schedule: month field "13": value 13 out of range 1-12`},
		{fieldDayOfWeek, "8", `schedule: day-of-week field "8": value 8 out of range 0-7`},
		{fieldMinute, "abc", `schedule: minute field "abc": "abc" is not a number`},
		{fieldHour, "MON", `schedule: hour field "MON": "MON" is not a number`},
		{fieldMonth, "MON", `schedule: month field "MON": "MON" is not a number or a month name (JAN-DEC)`},
		{fieldDayOfWeek, "JAN", `schedule: day-of-week field "JAN": "JAN" is not a number or a day name (SUN-SAT)`},
		{fieldDayOfWeek, "MONDAY", `schedule: day-of-week field "MONDAY": "MONDAY" is not a number or a day name (SUN-SAT)`},
		{fieldMinute, "-5", `schedule: minute field "-5": missing value`},
		{fieldMinute, "5-", `schedule: minute field "5-": missing value`},
		{fieldMinute, "+5", `schedule: minute field "+5": "+5" is not a number`},
		{fieldMinute, "1,,2", `schedule: minute field "1,,2": empty list element`},
		{fieldMinute, "1,", `schedule: minute field "1,": empty list element`},
		{fieldMinute, "", `schedule: minute field "": empty list element`},
		{fieldMinute, "20-10", `schedule: minute field "20-10": range 20-10 is backwards; write the smaller value first`},
		{fieldDayOfWeek, "FRI-MON", `schedule: day-of-week field "FRI-MON": range FRI-MON is backwards; write the smaller value first`},
		{fieldMinute, "*/0", `schedule: minute field "*/0": step 0 out of range 1-60`},
		{fieldMinute, "*/61", `schedule: minute field "*/61": step 61 out of range 1-60`},
		{fieldHour, "*/25", `schedule: hour field "*/25": step 25 out of range 1-24`},
		{fieldDayOfWeek, "*/8", `schedule: day-of-week field "*/8": step 8 out of range 1-7`},
		{fieldMinute, "*/", `schedule: minute field "*/": missing step after "/"`},
		{fieldMinute, "*/x", `schedule: minute field "*/x": step "x" is not a number`},
		{fieldMinute, "*/2/3", `schedule: minute field "*/2/3": step "2/3" is not a number`},
		{fieldMinute, "*-5", `schedule: minute field "*-5": "*" is not a number`},
		{fieldMinute, "?", `schedule: minute field "?": "?" is not a number`},
		{fieldDayOfMonth, "?,1", `schedule: day-of-month field "?,1": "?" must be the whole field`},
		{fieldDayOfMonth, "L", `schedule: day-of-month field "L": "L": the L, W and # extensions are not supported`},
		{fieldDayOfMonth, "15W", `schedule: day-of-month field "15W": "15W": the L, W and # extensions are not supported`},
		{fieldDayOfWeek, "5#3", `schedule: day-of-week field "5#3": "5#3": the L, W and # extensions are not supported`},
		{fieldDayOfWeek, "5L", `schedule: day-of-week field "5L": "5L": the L, W and # extensions are not supported`},
	}
	for _, tt := range tests {
		_, err := parseField(tt.field, tt.text)
		if err == nil {
			t.Errorf("%s %q: no error, want %s", fieldDefs[tt.field].name, tt.text, tt.want)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("%s %q:\n got %s\nwant %s", fieldDefs[tt.field].name, tt.text, err, tt.want)
		}
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Field != fieldDefs[tt.field].name || pe.Text != tt.text {
			t.Errorf("%s %q: error %#v does not name the field and text", fieldDefs[tt.field].name, tt.text, err)
		}
	}
}
