package config

import (
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
		problem  string
	}{
		{in: "plain", want: "plain"},
		{in: "$N and $ alone", want: "$N and $ alone"},
		{in: "${N}", want: "5"},
		{in: "x${N}y${N}z", want: "x5y5z"},
		{in: "${EMPTY}", want: ""},
		{in: "${EMPTY:-d}", want: "d"},
		{in: "${MISSING:-d:-e}", want: "d:-e"},
		{in: "${MISSING:-}", want: ""},
		{in: "${N:-d}", want: "5"},
		{in: "$${N}", want: "${N}"},
		{in: "$${N}${N}", want: "${N}5"},
		{in: "${MISSING}", problem: "environment variable MISSING is not set"},
		{in: "${}", problem: `"" is not a variable name`},
		{in: "${A-B}", problem: `"A-B" is not a variable name`},
		{in: "a${N", problem: `unterminated ${ in "${N"`},
	} {
		got, problems := expand(tc.in, lookup)
		switch {
		case tc.problem != "":
			if len(problems) != 1 || !strings.Contains(problems[0].msg, tc.problem) || problems[0].unset != strings.Contains(tc.problem, "not set") {
				t.Errorf("expand(%q) problems = %+v, want %q", tc.in, problems, tc.problem)
			}
		case len(problems) > 0:
			t.Errorf("expand(%q) problems = %+v", tc.in, problems)
		case got != tc.want:
			t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
