package main

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/cronfence/cronfence/cmd/cronfence/internal/config"
	"github.com/cronfence/cronfence/internal/forecast"
	"github.com/cronfence/cronfence/schedule"
)

// maxNextCount bounds `next --count`.
const maxNextCount = 10000

// nextCmd is `cronfence next`.
type nextCmd struct {
	Spec    string `arg:"" help:"Cron spec or @descriptor, as in a job's schedule; or, with --config, the name of one of its jobs."`
	TZ      string `name:"tz" default:"UTC" placeholder:"ZONE" help:"IANA time zone the spec is read in (a CRON_TZ= prefix in the spec wins). A job of --config has its own."`
	From    string `name:"from" placeholder:"RFC3339" help:"Print the slots after this instant. Defaults to now."`
	Count   int    `name:"count" short:"n" default:"5" help:"How many slots to print."`
	Config  string `name:"config" type:"path" placeholder:"FILE" help:"A config file: when the argument names one of its jobs, that job's schedule, zone, jitter and exclusions apply (its excluded slots are left out, as serve leaves them)."`
	Explain bool   `name:"explain" help:"For each slot, its wall time, its start with the jitter, the exclusion that holds it (excluded slots are listed) and what a daylight-saving change does to it; then what each change of the zone's offset in the year after --from does to the schedule."`
}

func (c *nextCmd) Run(a *app) error {
	if c.Count < 1 || c.Count > maxNextCount {
		return usageError("--count must be between 1 and %d, got %d", maxNextCount, c.Count)
	}
	from, err := parseFrom(c.From)
	if err != nil {
		return err
	}
	j, what, err := c.job(a)
	if err != nil {
		return err
	}
	slots, err := forecast.Slots(j, from, c.Count, c.Explain)
	if err != nil {
		return err
	}
	if c.Explain {
		fmt.Fprintln(a.stdout, what)
	}
	for _, s := range slots {
		if c.Explain {
			printSlot(a.stdout, s, "")
		} else {
			fmt.Fprintln(a.stdout, s.At.Format(time.RFC3339))
		}
	}
	if len(slots) < c.Count {
		fmt.Fprintf(a.stderr, "cronfence: %q has no more slots\n", c.Spec)
	}
	if c.Explain {
		return explainChanges(a.stdout, j, from)
	}
	return nil
}

// job returns what next forecasts: the job of --config the argument names,
// else the argument as a spec in --tz; and a line saying which.
func (c *nextCmd) job(a *app) (forecast.Job, string, error) {
	f, err := loadConfig(a.globals, c.Config, config.Reads{Schedules: true})
	if err != nil {
		return forecast.Job{}, "", err
	}
	if f != nil {
		if i := slices.IndexFunc(f.Jobs, func(j config.Job) bool { return j.Name == c.Spec }); i >= 0 {
			cj := f.Jobs[i]
			if c.TZ != "UTC" && c.TZ != cj.TimeZone {
				return forecast.Job{}, "", usageError("--tz %q: job %s of %s has its own zone, %s; drop --tz", c.TZ, cj.Name, f.Path, cj.TimeZone)
			}
			j, err := forecastJob(cj, f.Exclude)
			if err != nil {
				return forecast.Job{}, "", err
			}
			what := fmt.Sprintf("job %s of %s: %q in %s", cj.Name, f.Path, cj.Schedule, cj.TimeZone)
			if cj.Jitter > 0 {
				what += fmt.Sprintf(", jitter %s", cj.Jitter)
			}
			if entries := j.Exclusions.Entries(); len(entries) > 0 {
				what += fmt.Sprintf(", excluding %q", entries)
			}
			return j, what, nil
		}
	}
	if c.TZ == "" || c.TZ == "Local" {
		return forecast.Job{}, "", usageError("--tz %q: name an IANA zone such as Europe/Lisbon", c.TZ)
	}
	loc, err := time.LoadLocation(c.TZ)
	if err != nil {
		return forecast.Job{}, "", usageError("--tz %q: unknown time zone: %w", c.TZ, err)
	}
	s, err := schedule.Parse(c.Spec, &schedule.Options{Location: loc})
	if err != nil {
		if f != nil {
			return forecast.Job{}, "", usageError("%q is neither a job of %s nor a valid spec: %w", c.Spec, f.Path, err)
		}
		return forecast.Job{}, "", usageError("%w", err)
	}
	return forecast.Job{Name: c.Spec, Schedule: s}, fmt.Sprintf("spec %q in %s", s.String(), loc), nil
}

// explainChanges prints what each change of j's zone's offset in the year
// after from does to j.
func explainChanges(w io.Writer, j forecast.Job, from time.Time) error {
	end := from.Add(forecast.Year)
	effects, err := forecast.Effects(j.Schedule, from, end)
	if err != nil {
		return err
	}
	if len(effects) == 0 {
		fmt.Fprintf(w, "\nNo change of UTC offset in %s from %s to %s.\n", zoneName(j, from), from.Format(time.DateOnly), end.Format(time.DateOnly))
		return nil
	}
	fmt.Fprintf(w, "\nChanges of UTC offset in %s from %s to %s:\n", zoneName(j, from), from.Format(time.DateOnly), end.Format(time.DateOnly))
	for _, e := range effects {
		fmt.Fprintf(w, "  %s: %s\n", e.Change, e)
	}
	return nil
}
