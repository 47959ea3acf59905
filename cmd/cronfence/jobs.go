package main

import (
	"fmt"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/cmd/cronfence/internal/config"
	"github.com/cronfence/cronfence/internal/adminview"
	"github.com/cronfence/cronfence/internal/jitter"
)

// maxExcludedSteps bounds the slots and jumps the next slot takes past
// the exclusions, as the scheduler's JobInfo.Next does.
const maxExcludedSteps = 100_000

// jobsCmd is `cronfence jobs`.
type jobsCmd struct {
	serverFlags
	Config string `name:"config" type:"path" placeholder:"FILE" help:"The serve config file, for the job list in direct mode (its database: and sqlite: apply unless --database is given)."`
}

func (c *jobsCmd) Run(a *app) error {
	var jobs []client.Job
	if c.Server != "" {
		var out struct {
			Jobs []client.Job `json:"jobs"`
		}
		if err := c.call(a.ctx, http.MethodGet, "/api/admin/cron", nil, &out); err != nil {
			return err
		}
		jobs = out.Jobs
	} else {
		if c.Config == "" {
			return usageError("jobs needs --config FILE (the job list) or --server URL")
		}
		var err error
		if jobs, err = c.direct(a); err != nil {
			return err
		}
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSCHEDULE\tZONE\tENABLED\tOVERRIDE\tNEXT\tLAST RUN\tRESULT\tLEASE")
	for _, j := range jobs {
		ov := "-"
		if o := j.Override; o != nil && o.Enabled != nil {
			ov = fmt.Sprintf("%s by %s at %s", overrideText(o.Enabled), orDash(o.By), short(o.At))
		}
		last, result := "-", "-"
		if r := j.LastRun; r != nil {
			last, result = short(r.StartedAt), strings.ReplaceAll(resultText(*r), "\n", " ")
		}
		lease := "-"
		if l := j.Lease; l != nil {
			state := "free since" // released or lapsed
			if l.Active {
				state = "held until"
			}
			lease = fmt.Sprintf("%s gen %d %s %s", orDash(l.Holder), l.Generation, state, short(l.ExpiresAt))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.Name, j.Schedule, j.TimeZone, enabledText(j.Enabled),
			ov, nextText(j), last, result, lease)
	}
	return tw.Flush()
}

// nextText is a job's next slot for the table: "paused" or "disabled" for
// a job that will not run (the API gives it no next slot).
func nextText(j client.Job) string {
	switch {
	case j.Enabled:
		return short(j.Next)
	case j.Override != nil && j.Override.Enabled != nil:
		return "paused"
	default:
		return "disabled"
	}
}

func (c *jobsCmd) direct(a *app) ([]client.Job, error) {
	f, err := loadConfig(a.globals, c.Config, config.Reads{Schedules: true})
	if err != nil {
		return nil, err
	}
	db, err := openDirect(a, f)
	if err != nil {
		return nil, err
	}
	defer db.close()
	now := time.Now()
	declared := make([]adminview.Declared, len(f.Jobs))
	for i, j := range f.Jobs {
		d := adminview.Declared{Name: j.Name, Schedule: j.Schedule, TimeZone: j.TimeZone, Overlap: j.Overlap, Disabled: j.Disabled, Jitter: j.Jitter}
		if fj, err := forecastJob(j, f.Exclude); err == nil {
			// As serve computes them: past the exclusions, delayed by the
			// jitter.
			d.Exclude = fj.Exclusions.Entries()
			if d.Next = fj.Exclusions.Next(fj.Schedule, now, maxExcludedSteps); !d.Next.IsZero() {
				d.Starts = d.Next.Add(jitter.Delay(j.Name, j.Jitter, d.Next, fj.Schedule.Next(d.Next)))
			}
		}
		declared[i] = d
	}
	// The same view the REST API builds, from the same store reads (the
	// lease's state judged by the database clock).
	jobs, op, err := adminview.Jobs(a.ctx, db, declared)
	if err != nil {
		return nil, fmt.Errorf("%s in %s: %w", op, db.where, err)
	}
	return jobs, nil
}
