package main

import (
	"fmt"
	"time"

	"github.com/cronfence/cronfence/schedule"
)

// maxNextCount bounds `next --count`.
const maxNextCount = 10000

// nextCmd is `cronfence next`.
type nextCmd struct {
	Spec  string `arg:"" help:"Cron spec or @descriptor, as in a job's schedule."`
	TZ    string `name:"tz" default:"UTC" placeholder:"ZONE" help:"IANA time zone the spec is read in (a CRON_TZ= prefix in the spec wins)."`
	From  string `name:"from" placeholder:"RFC3339" help:"Print the slots after this instant. Defaults to now."`
	Count int    `name:"count" short:"n" default:"5" help:"How many slots to print."`
}

func (c *nextCmd) Run(a *app) error {
	if c.Count < 1 || c.Count > maxNextCount {
		return usageError("--count must be between 1 and %d, got %d", maxNextCount, c.Count)
	}
	if c.TZ == "" || c.TZ == "Local" {
		return usageError("--tz %q: name an IANA zone such as Europe/Lisbon", c.TZ)
	}
	loc, err := time.LoadLocation(c.TZ)
	if err != nil {
		return usageError("--tz %q: unknown time zone: %w", c.TZ, err)
	}
	from := time.Now()
	if c.From != "" {
		if from, err = time.Parse(time.RFC3339, c.From); err != nil {
			return usageError("--from %q: not an RFC 3339 instant such as 2024-03-09T12:00:00Z", c.From)
		}
	}
	s, err := schedule.Parse(c.Spec, &schedule.Options{Location: loc})
	if err != nil {
		return usageError("%w", err)
	}
	t := from
	for range c.Count {
		if t = s.Next(t); t.IsZero() {
			fmt.Fprintf(a.stderr, "cronfence: %q has no more slots\n", c.Spec)
			break
		}
		fmt.Fprintln(a.stdout, t.Format(time.RFC3339))
	}
	return nil
}
