package schedule

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// randomSpec writes a random but valid cron expression, mixing every form
// the grammar has, so property tests reach the corners a hand-written table
// would not. withSeconds adds the optional leading second field.
func randomSpec(r *rand.Rand, withSeconds bool) string {
	var fields []string
	if withSeconds {
		fields = append(fields, randomField(r, fieldSecond))
	}
	for f := fieldMinute; f <= fieldDayOfWeek; f++ {
		fields = append(fields, randomField(r, f))
	}
	return strings.Join(fields, " ")
}

// randomFiringSpec is randomSpec drawn again until some day matches, as
// Parse requires.
func randomFiringSpec(r *rand.Rand, withSeconds bool) string {
	for {
		expr := randomSpec(r, withSeconds)
		if s, err := specOf(expr); err == nil && s.neverDays() == "" {
			return expr
		}
	}
}

func randomField(r *rand.Rand, f field) string {
	def := &fieldDefs[f]
	// Wildcards are common in real specs and keep the schedules dense
	// enough to be interesting; the day fields lean towards "*" so that
	// the Vixie rule does not make most specs rare.
	star := 0.35
	if f == fieldDayOfMonth || f == fieldMonth || f == fieldDayOfWeek {
		star = 0.55
	}
	if r.Float64() < star {
		if def.question && r.IntN(8) == 0 {
			return "?"
		}
		return "*"
	}
	n := 1
	if r.IntN(3) == 0 {
		n = 1 + r.IntN(3)
	}
	elems := make([]string, n)
	for i := range elems {
		elems[i] = randomElement(r, def)
	}
	return strings.Join(elems, ",")
}

func randomElement(r *rand.Rand, def *fieldDef) string {
	val := func() (int, string) {
		v := def.min + r.IntN(def.max-def.min+1)
		if def.names != nil && v-def.min < len(def.names) && r.IntN(3) == 0 {
			name := def.names[v-def.min]
			if r.IntN(2) == 0 {
				name = strings.ToLower(name)
			}
			return v, name
		}
		return v, fmt.Sprint(v)
	}
	maxStep := def.starMax - def.min + 1
	switch r.IntN(6) {
	case 0, 1: // a single value
		_, s := val()
		return s
	case 2: // a range
		a, as := val()
		b, bs := val()
		if a > b {
			as, bs = bs, as
		}
		return as + "-" + bs
	case 3: // a stepped range
		a, as := val()
		b, bs := val()
		if a > b {
			as, bs = bs, as
		}
		return fmt.Sprintf("%s-%s/%d", as, bs, 1+r.IntN(maxStep))
	case 4: // */n
		return fmt.Sprintf("*/%d", 1+r.IntN(min(maxStep, 12)))
	default: // a/n
		_, as := val()
		return fmt.Sprintf("%s/%d", as, 1+r.IntN(maxStep))
	}
}
