package schedule

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Parse parses a cron spec (see the package documentation for the
// grammar). Every spec it rejects gets a *ParseError naming the part at
// fault; it never panics and its work is bounded by MaxSpecLen.
func Parse(spec string, opts *Options) (Schedule, error) {
	if len(spec) > MaxSpecLen {
		return nil, &ParseError{Field: "spec", Text: spec, Err: fmt.Errorf("longer than %d bytes", MaxSpecLen)}
	}
	loc, anchor, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	words := strings.Fields(spec)
	if len(words) == 0 {
		return nil, &ParseError{Field: "spec", Text: spec, Err: errors.New("empty")}
	}
	text := strings.Join(words, " ")
	if name, zone, ok := strings.Cut(words[0], "="); ok {
		if name != "CRON_TZ" && name != "TZ" {
			return nil, &ParseError{Field: "spec", Text: words[0],
				Err: errors.New("unknown prefix; the only one accepted is a time zone, CRON_TZ=Zone or TZ=Zone")}
		}
		if loc, err = loadZone(zone); err != nil {
			return nil, err
		}
		if words = words[1:]; len(words) == 0 {
			return nil, &ParseError{Field: "spec", Text: text, Err: errors.New("no schedule after the time zone")}
		}
	}
	if strings.HasPrefix(words[0], "@") {
		return parseDescriptor(text, words, loc, anchor)
	}
	return parseCron(text, words, loc)
}

// parseCron parses the five or six fields of a cron expression.
func parseCron(text string, words []string, loc *time.Location) (Schedule, error) {
	switch len(words) {
	case 5:
		words = append([]string{"0"}, words...) // second 0
	case 6:
	default:
		return nil, &ParseError{Field: "spec", Text: text, Err: fmt.Errorf(
			"expected 5 fields (minute hour day-of-month month day-of-week) or 6 (a second field first), got %d",
			len(words))}
	}
	s, err := parseFields([6]string(words))
	if err != nil {
		return nil, err
	}
	if why := s.neverDays(); why != "" {
		return nil, &ParseError{Field: "spec", Text: text, Err: errors.New("never fires: " + why)}
	}
	c := &cronSchedule{text: text, loc: loc, spec: s}
	// Some day matches, yet every wall time named may fall where the
	// zone's clock jumps forward, which a wildcard job skips ("* 2 8-14 3
	// */7" in America/New_York since 2007). Next searches a bounded span
	// (cron.go), long enough for any pattern to recur.
	if now := time.Now(); c.Next(now).IsZero() {
		why := fmt.Sprintf("no time it names from now on exists in %s, each falls where the clock jumps forward", loc)
		if last := c.Prev(now); !last.IsZero() {
			why += fmt.Sprintf(" (the last slot was %s)", last.Format(time.RFC3339))
		}
		return nil, &ParseError{Field: "spec", Text: text, Err: errors.New("never fires: " + why)}
	}
	return c, nil
}

func parseFields(words [6]string) (*spec, error) {
	var fields [6]parsedField
	for i, w := range words {
		f, err := parseField(field(i), w)
		if err != nil {
			return nil, err
		}
		fields[i] = f
	}
	return newSpec(fields), nil
}

// descriptors maps the @-names to six-field expressions, as cronie spells
// them out. @hourly has "*" in its hour field and so is a wildcard job that
// follows real time across daylight-saving changes; the others are
// fixed-time jobs at midnight.
var descriptors = map[string]string{
	"@yearly":   "0 0 0 1 1 *",
	"@annually": "0 0 0 1 1 *",
	"@monthly":  "0 0 0 1 * *",
	"@weekly":   "0 0 0 * * 0",
	"@daily":    "0 0 0 * * *",
	"@midnight": "0 0 0 * * *",
	"@hourly":   "0 0 * * * *",
}

func parseDescriptor(text string, words []string, loc *time.Location, anchor int64) (Schedule, error) {
	name := strings.ToLower(words[0])
	switch name {
	case "@every":
		return parseEvery(text, words, loc, anchor)
	case "@reboot":
		return nil, &ParseError{Field: "descriptor", Text: words[0], Err: errors.New(
			"not supported: a cluster has no one boot to run at; run start-up work from the program itself")}
	}
	expr, ok := descriptors[name]
	if !ok {
		return nil, &ParseError{Field: "descriptor", Text: words[0], Err: errors.New(
			"unknown; use @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every <duration>")}
	}
	if len(words) > 1 {
		return nil, &ParseError{Field: "descriptor", Text: words[0], Err: fmt.Errorf(
			"unexpected text after it: %s", quote(strings.Join(words[1:], " ")))}
	}
	s, err := parseFields([6]string(strings.Fields(expr)))
	if err != nil {
		return nil, fmt.Errorf("schedule: built-in %s: %w", name, err) // a bug in the table above; tested
	}
	return &cronSchedule{text: text, loc: loc, spec: s}, nil
}

func parseEvery(text string, words []string, loc *time.Location, anchor int64) (Schedule, error) {
	switch {
	case len(words) < 2:
		return nil, &ParseError{Field: "spec", Text: text, Err: errors.New(`@every needs a duration, e.g. "@every 1h30m"`)}
	case len(words) > 2:
		return nil, &ParseError{Field: "spec", Text: text, Err: errors.New("@every takes exactly one duration")}
	}
	d, err := time.ParseDuration(words[1])
	switch {
	case err != nil:
		return nil, &ParseError{Field: "@every", Text: words[1], Err: err}
	case d < time.Second:
		return nil, &ParseError{Field: "@every", Text: words[1], Err: errors.New("must be at least 1s")}
	case d%time.Second != 0:
		return nil, &ParseError{Field: "@every", Text: words[1], Err: errors.New(
			"must be a whole number of seconds (slots are whole seconds)")}
	}
	return &everySchedule{text: text, loc: loc, every: int64(d / time.Second), anchor: anchor}, nil
}

// loadZone loads a zone named in a CRON_TZ= or TZ= prefix.
func loadZone(name string) (*time.Location, error) {
	fail := func(err error) (*time.Location, error) {
		return nil, &ParseError{Field: "time zone", Text: name, Err: err}
	}
	switch name {
	case "":
		return fail(errors.New("empty; name an IANA zone such as Europe/Lisbon"))
	case "Local":
		// time.LoadLocation would accept it, but each machine has its own.
		return fail(errors.New("each machine's local zone may differ; name an IANA zone such as Europe/Lisbon"))
	}
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location), nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return fail(err)
	}
	actual, _ := zones.LoadOrStore(name, loc)
	return actual.(*time.Location), nil
}

// zones shares one *time.Location per zone name among the specs that name
// it: time.LoadLocation keeps no cache, and each call holds a fresh copy
// of the zone's transitions, a few hundred bytes to several KB. A
// Location is immutable, so sharing one changes no answer. Only names
// that loaded are kept, so the map grows with the zones in use, not with
// the specs parsed.
var zones sync.Map // zone name → *time.Location

// resolve applies the defaults and checks the options.
func (o *Options) resolve() (loc *time.Location, anchor int64, err error) {
	loc = time.UTC
	if o == nil {
		return loc, 0, nil
	}
	if o.Location != nil {
		loc = o.Location
	}
	if !o.Anchor.IsZero() {
		text := o.Anchor.Format(time.RFC3339Nano)
		if o.Anchor.Nanosecond() != 0 {
			return nil, 0, &ParseError{Field: "Options.Anchor", Text: text, Err: errors.New("must be a whole second")}
		}
		anchor = o.Anchor.Unix()
		if anchor < minSlot || anchor > maxSlot {
			return nil, 0, &ParseError{Field: "Options.Anchor", Text: text, Err: errors.New("must lie between the years 1 and 9999")}
		}
	}
	return loc, anchor, nil
}
