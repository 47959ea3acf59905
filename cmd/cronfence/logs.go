package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/internal/adminview"
	"github.com/cronfence/cronfence/store"
)

// logsCmd is `cronfence logs`.
type logsCmd struct {
	serverFlags
	Job    string        `arg:"" help:"Job name."`
	Config string        `name:"config" type:"path" placeholder:"FILE" help:"The serve config file, for direct mode: its database as serve resolves it (--database, else its database:, else its sqlite: file, by default cronfence.db beside it; --sqlite does not apply), and the jobs it declares are the known ones."`
	Limit  int           `name:"limit" short:"n" default:"20" help:"How many runs, newest first by start (with --follow: the last ones, oldest first, then each run as it ends)."`
	JSON   bool          `name:"json" help:"Print one JSON object a line, in the REST API's shape."`
	Follow bool          `name:"follow" short:"f" help:"Go on printing each new run as it ends, with its log lines, until interrupted (SIGINT, SIGTERM)."`
	Every  time.Duration `name:"every" default:"1s" help:"With --follow: how often to look for new runs."`

	headerDone bool // the table's header is written (--follow)
}

// followPage is how many of the newest runs each look of --follow reads:
// more new runs than this between two looks are told as a count.
const followPage = 200

func (c *logsCmd) Run(a *app) error {
	if err := validJob(c.Job); err != nil {
		return err
	}
	if c.Limit < 1 || c.Limit > store.MaxRunListLimit {
		return usageError("-n must be between 1 and %d, got %d", store.MaxRunListLimit, c.Limit)
	}
	if c.Follow && c.Every < 100*time.Millisecond {
		return usageError("--every must be at least 100ms, got %s", c.Every)
	}
	list, done, err := c.lister(a)
	if err != nil {
		return err
	}
	defer done()
	runs, err := list(c.Limit)
	if err != nil {
		return err
	}
	if !c.Follow {
		return c.print(a, runs, false)
	}
	return c.follow(a, list, runs)
}

// lister returns how to read the job's newest runs (newest first), through
// the server or directly, and what closes the database when done.
func (c *logsCmd) lister(a *app) (list func(limit int) ([]client.Run, error), done func(), err error) {
	if c.Server != "" {
		return func(limit int) ([]client.Run, error) {
			var out struct {
				JobID string       `json:"jobId"`
				Logs  []client.Run `json:"logs"`
			}
			err := c.call(a.ctx, http.MethodGet, jobPath(c.Job)+"/logs?limit="+strconv.Itoa(limit), nil, &out)
			return out.Logs, err
		}, func() {}, nil
	}
	db, err := directJob(a, c.Config, c.Job, true)
	if err != nil {
		return nil, nil, err
	}
	return func(limit int) ([]client.Run, error) {
		rs, err := db.RunList(a.ctx, store.RunListParams{Job: c.Job, Limit: limit})
		if err != nil {
			return nil, wrapInvalid(fmt.Errorf("listing the runs of %s in %s: %w", c.Job, db.where, err))
		}
		runs := make([]client.Run, 0, len(rs))
		for _, r := range rs {
			runs = append(runs, adminview.RunOf(r))
		}
		return runs, nil
	}, db.close, nil
}

// follow prints runs (newest first) oldest first, then every c.Every the
// runs that ended since, in the order they ended, until the command is
// interrupted. A run's row is written when it ends, and ids grow in the
// order rows are written: the rows with an id above the highest printed
// are the runs that ended since, whenever they started.
func (c *logsCmd) follow(a *app, list func(int) ([]client.Run, error), runs []client.Run) error {
	slices.Reverse(runs)
	if err := c.print(a, runs, true); err != nil {
		return err
	}
	var last int64
	for _, r := range runs {
		last = max(last, r.ID)
	}
	timer := time.NewTimer(c.Every)
	defer timer.Stop()
	for {
		select {
		case <-a.ctx.Done():
			return nil // interrupted: following ends there
		case <-timer.C:
		}
		newest, err := list(followPage)
		if err != nil {
			if a.ctx.Err() != nil {
				return nil
			}
			return err
		}
		var fresh []client.Run
		for _, r := range newest {
			if r.ID > last {
				fresh = append(fresh, r)
			}
		}
		slices.SortFunc(fresh, func(a, b client.Run) int { return cmp.Compare(a.ID, b.ID) })
		if len(fresh) == followPage && last > 0 {
			fmt.Fprintf(a.stderr, "cronfence: more than %d runs ended since the last look; the older ones are not shown\n", followPage)
		}
		if len(fresh) > 0 {
			last = fresh[len(fresh)-1].ID
			if err := c.print(a, fresh, true); err != nil {
				return err
			}
		}
		timer.Reset(c.Every)
	}
}

// print writes runs as JSON lines or as a table; with logs, each row is
// followed by its run's log lines, indented. A table's header is written
// once (a follow's later rows go under it).
func (c *logsCmd) print(a *app, runs []client.Run, logs bool) error {
	if c.JSON {
		enc := json.NewEncoder(a.stdout)
		for _, r := range runs {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	if len(runs) == 0 {
		if !c.headerDone {
			fmt.Fprintf(a.stderr, "cronfence: no runs of %s yet\n", c.Job)
			c.headerDone = c.Follow
		}
		return nil
	}
	// Fixed widths under --follow, so rows printed later line up.
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	row := func(started, slot, owner, gen, attempt, took, result string) {
		if c.Follow {
			fmt.Fprintf(a.stdout, "%-20s  %-20s  %-24s  %5s  %7s  %8s  %s\n", started, slot, owner, gen, attempt, took, result)
			return
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", started, slot, owner, gen, attempt, took, result)
	}
	if !c.headerDone {
		row("STARTED", "SLOT", "OWNER", "GEN", "ATTEMPT", "DURATION", "RESULT")
		c.headerDone = c.Follow
	}
	for _, r := range runs {
		row(short(r.StartedAt), slotText(r), orDash(r.Owner), strconv.FormatInt(r.Generation, 10), strconv.Itoa(r.Attempt),
			durationText(r), strings.ReplaceAll(resultText(r), "\n", " "))
		if logs {
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, line := range r.Logs {
				fmt.Fprintln(a.stdout, "    "+strings.ReplaceAll(line, "\n", " "))
			}
		}
	}
	return tw.Flush()
}

// durationText is how long a run took, for a table: "-" for a skip (it
// took no time) and a run not finished.
func durationText(r client.Run) string {
	if r.Result.Skipped || r.StartedAt == nil || r.FinishedAt == nil {
		return "-"
	}
	start, err1 := time.Parse(time.RFC3339Nano, *r.StartedAt)
	end, err2 := time.Parse(time.RFC3339Nano, *r.FinishedAt)
	if err1 != nil || err2 != nil || end.Before(start) {
		return "-"
	}
	switch d := end.Sub(start); {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

// slotText is a run's slot for a table, "manual" for a manual run.
func slotText(r client.Run) string {
	if r.Manual || r.Slot == nil {
		return "manual"
	}
	return short(r.Slot)
}
