package main

// `cronfence pause`, `resume` and `unset`: a job's override, the operator's
// enabled=false, enabled=true or none, which every replica obeys.

import (
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/store"
)

// overrideArgs are what pause, resume and unset share.
type overrideArgs struct {
	serverFlags
	Job    string `arg:"" help:"Job name."`
	Config string `name:"config" type:"path" placeholder:"FILE" help:"The serve config file, for direct mode: its database as serve resolves it (--database, else its database:, else its sqlite: file, by default cronfence.db beside it; --sqlite does not apply), and the jobs it declares are the known ones."`
	Note   string `name:"note" help:"Why, recorded with the change."`
	By     string `name:"by" help:"Who, recorded with the change (direct mode; a server records its token's name). Defaults to $USER, else \"cli\"."`
}

func (o *overrideArgs) set(a *app, enabled *bool, until time.Time) error {
	return setOverride(a, &o.serverFlags, o.Config, o.Job, enabled, until, o.Note, o.By)
}

type (
	pauseCmd struct {
		overrideArgs
		Until string `name:"until" placeholder:"RFC3339" help:"End the pause by itself at this instant (e.g. 2026-12-24T08:00:00Z): the slots before it are skipped (paused), and from it on the job runs again on every replica."`
	}
	resumeCmd struct{ overrideArgs }
	unsetCmd  struct{ overrideArgs }
)

func (c *pauseCmd) Run(a *app) error {
	var until time.Time
	if c.Until != "" {
		var err error
		if until, err = time.Parse(time.RFC3339Nano, c.Until); err != nil {
			return usageError("--until %q: not an RFC 3339 instant such as 2026-12-24T08:00:00Z", c.Until)
		}
	}
	off := false
	return c.set(a, &off, until)
}
func (c *resumeCmd) Run(a *app) error { on := true; return c.set(a, &on, time.Time{}) }
func (c *unsetCmd) Run(a *app) error  { return c.set(a, nil, time.Time{}) }

// setOverride sets the job's override, ended at until when not zero (a
// pause until a time).
func setOverride(a *app, s *serverFlags, configPath, job string, enabled *bool, until time.Time, note, by string) error {
	if err := validJob(job); err != nil {
		return err
	}
	if s.Server != "" {
		var v client.Job
		body := map[string]any{"enabled": enabled, "note": note}
		if !until.IsZero() {
			body["until"] = until.UTC().Format(time.RFC3339Nano)
		}
		if err := s.call(a.ctx, http.MethodPut, jobPath(job), body, &v); err != nil {
			return err
		}
		o := client.Override{}
		if v.Override != nil {
			o = *v.Override
		}
		fmt.Fprintf(a.stdout, "%s: override %s%s, effective %s, by %s at %s%s\n", v.Name, overrideText(o.Enabled), untilText(o.Until),
			enabledText(v.Enabled), orDash(o.By), short(o.At), noteText(o.Note))
		return nil
	}
	if by == "" {
		by = os.Getenv("USER")
	}
	if by == "" {
		by = "cli"
	}
	db, err := directJob(a, configPath, job, false)
	if err != nil {
		return err
	}
	defer db.close()
	if !until.IsZero() {
		now, err := db.Now(a.ctx)
		if err != nil {
			return fmt.Errorf("reading the clock of %s: %w", db.where, err)
		}
		if !until.After(now) {
			return usageError("--until %s is not ahead of the database clock (%s)", until.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
		}
	}
	st, err := db.JobStateSet(a.ctx, store.JobStateSetParams{Job: job, Enabled: enabled, By: by, Note: note, Until: until})
	if err != nil {
		return wrapInvalid(fmt.Errorf("saving the override of %s in %s: %w", job, db.where, err))
	}
	fmt.Fprintf(a.stdout, "%s: override %s%s, by %s at %s%s\n", st.Job, overrideText(st.EnabledOverride), untilText(timeStr(st.Until)),
		orDash(st.OverrideBy), short(timeStr(st.OverrideAt)), noteText(st.Note))
	return nil
}

// untilText is " until T" for an override that ends by itself, else "".
func untilText(until *string) string {
	if until == nil {
		return ""
	}
	return " until " + short(until)
}

func timeStr(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}
