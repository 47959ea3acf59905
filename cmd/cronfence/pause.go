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

func (o *overrideArgs) set(a *app, enabled *bool) error {
	return setOverride(a, &o.serverFlags, o.Config, o.Job, enabled, o.Note, o.By)
}

type (
	pauseCmd  struct{ overrideArgs }
	resumeCmd struct{ overrideArgs }
	unsetCmd  struct{ overrideArgs }
)

func (c *pauseCmd) Run(a *app) error  { off := false; return c.set(a, &off) }
func (c *resumeCmd) Run(a *app) error { on := true; return c.set(a, &on) }
func (c *unsetCmd) Run(a *app) error  { return c.set(a, nil) }

func setOverride(a *app, s *serverFlags, configPath, job string, enabled *bool, note, by string) error {
	if err := validJob(job); err != nil {
		return err
	}
	if s.Server != "" {
		var v client.Job
		if err := s.call(a.ctx, http.MethodPut, jobPath(job), map[string]any{"enabled": enabled, "note": note}, &v); err != nil {
			return err
		}
		o := client.Override{}
		if v.Override != nil {
			o = *v.Override
		}
		fmt.Fprintf(a.stdout, "%s: override %s, effective %s, by %s at %s%s\n", v.Name, overrideText(o.Enabled),
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
	st, err := db.JobStateSet(a.ctx, store.JobStateSetParams{Job: job, Enabled: enabled, By: by, Note: note})
	if err != nil {
		return wrapInvalid(fmt.Errorf("saving the override of %s in %s: %w", job, db.where, err))
	}
	fmt.Fprintf(a.stdout, "%s: override %s, by %s at %s%s\n", st.Job, overrideText(st.EnabledOverride),
		orDash(st.OverrideBy), short(timeStr(st.OverrideAt)), noteText(st.Note))
	return nil
}

func timeStr(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}
