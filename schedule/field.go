package schedule

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// field identifies one of the six cron fields.
type field int

const (
	fieldSecond field = iota
	fieldMinute
	fieldHour
	fieldDayOfMonth
	fieldMonth
	fieldDayOfWeek
)

// fieldDef describes what a field accepts.
type fieldDef struct {
	name string
	// min and max bound the values that may be written.
	min, max int
	// starMax is the last value that "*" and "a/n" reach. It equals max
	// except for the day of the week, where 7 is only an alias of Sunday
	// (0): "*/2" must mean 0,2,4,6, not 0,2,4,6 and Sunday again.
	starMax int
	// names are the accepted names for min, min+1, ... (case-insensitive).
	names []string
	// nameHint completes "is not a number ..." in error messages.
	nameHint string
	// question reports whether "?" is accepted as a whole-field "*".
	question bool
}

var fieldDefs = [...]fieldDef{
	fieldSecond:     {name: "second", min: 0, max: 59, starMax: 59},
	fieldMinute:     {name: "minute", min: 0, max: 59, starMax: 59},
	fieldHour:       {name: "hour", min: 0, max: 23, starMax: 23},
	fieldDayOfMonth: {name: "day-of-month", min: 1, max: 31, starMax: 31, question: true},
	fieldMonth: {name: "month", min: 1, max: 12, starMax: 12,
		names:    []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"},
		nameHint: " or a month name (JAN-DEC)"},
	fieldDayOfWeek: {name: "day-of-week", min: 0, max: 7, starMax: 6, question: true,
		names:    []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"},
		nameHint: " or a day name (SUN-SAT)"},
}

// parsedField is one field after parsing.
type parsedField struct {
	set bitset
	// star reports that the field was written starting with "*" (or was
	// "?"). Vixie cron keys its day-of-month/day-of-week rule on exactly
	// this, not on which days the field selects: "*/2" counts as a star;
	// cronie keys on it too to tell wildcard jobs (a starred minute or hour
	// field) from fixed-time ones (see dst.go).
	star bool
}

// parseField parses the text of one field:
//
//	field   = "?" | element { "," element }      ("?" only in day fields)
//	element = base [ "/" step ]
//	base    = "*" | value | value "-" value
//	value   = number | name
//
// "a/n" means "a-max/n". Errors are *ParseError naming the field.
func parseField(f field, text string) (parsedField, error) {
	def := &fieldDefs[f]
	fail := func(err error) (parsedField, error) {
		return parsedField{}, &ParseError{Field: def.name, Text: text, Err: err}
	}
	if text == "?" && def.question {
		return parsedField{set: span(def.min, def.starMax), star: true}, nil
	}
	pf := parsedField{star: strings.HasPrefix(text, "*")}
	for elem := range strings.SplitSeq(text, ",") {
		set, err := def.parseElement(elem)
		if err != nil {
			return fail(err)
		}
		pf.set |= set
	}
	if f == fieldDayOfWeek && pf.set.has(7) {
		pf.set = pf.set&^(1<<7) | 1 // 7 is Sunday, like 0
	}
	return pf, nil
}

// parseElement parses one list element.
func (def *fieldDef) parseElement(elem string) (set bitset, err error) {
	if elem == "" {
		return 0, errors.New("empty list element")
	}
	base, stepText, hasStep := strings.Cut(elem, "/")
	var lo, hi int
	switch {
	case base == "*":
		lo, hi = def.min, def.starMax
	case base == "?" && def.question:
		return 0, errors.New(`"?" must be the whole field`)
	default:
		first, last, isRange := strings.Cut(base, "-")
		if lo, err = def.parseValue(first); err != nil {
			return 0, err
		}
		switch {
		case isRange:
			if hi, err = def.parseValue(last); err != nil {
				return 0, err
			}
			if lo > hi {
				return 0, fmt.Errorf("range %s is backwards; write the smaller value first", base)
			}
		case hasStep:
			// "a/n" runs from a to the end of the field.
			if lo > def.starMax {
				lo = def.min // day-of-week 7 is Sunday
			}
			hi = def.starMax
		default:
			return 1 << uint(lo), nil
		}
	}
	step := 1
	if hasStep {
		if step, err = def.parseStep(stepText); err != nil {
			return 0, err
		}
	}
	for v := lo; v <= hi; v += step {
		set |= 1 << uint(v)
	}
	return set, nil
}

// parseValue parses a number or a name and checks it is in range.
func (def *fieldDef) parseValue(tok string) (int, error) {
	if tok == "" {
		return 0, errors.New("missing value")
	}
	if isDigits(tok) {
		n, err := strconv.Atoi(tok)
		if err != nil || n < def.min || n > def.max {
			return 0, fmt.Errorf("value %s out of range %d-%d", tok, def.min, def.max)
		}
		return n, nil
	}
	for i, name := range def.names {
		if strings.EqualFold(tok, name) {
			return def.min + i, nil
		}
	}
	if isExtension(tok) {
		return 0, fmt.Errorf("%q: the L, W and # extensions are not supported", tok)
	}
	return 0, fmt.Errorf("%q is not a number%s", tok, def.nameHint)
}

func (def *fieldDef) parseStep(tok string) (int, error) {
	if tok == "" {
		return 0, errors.New("missing step after \"/\"")
	}
	// A step larger than the field selects only the start value, which is
	// surely not what was meant; "*/60" for minutes is still accepted.
	maxStep := def.starMax - def.min + 1
	if !isDigits(tok) {
		return 0, fmt.Errorf("step %q is not a number", tok)
	}
	n, err := strconv.Atoi(tok)
	if err != nil || n < 1 || n > maxStep {
		return 0, fmt.Errorf("step %s out of range 1-%d", tok, maxStep)
	}
	return n, nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// isExtension recognises Quartz-style L, W and # syntax ("L", "15W",
// "5L", "LW", "5#3") so the error can say why it is refused.
func isExtension(tok string) bool {
	if strings.Contains(tok, "#") {
		return true
	}
	up := strings.ToUpper(tok)
	rest := strings.TrimRight(up, "LW")
	return rest != up && (rest == "" || isDigits(rest))
}
