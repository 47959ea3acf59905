package main

// `cronfence backfill`: run the slots of a job's range that never ran.
// The command records the backfill (directly on the database of --config,
// or through --server) and follows its progress; the replicas that serve
// the job drive it, so it goes on if the command is interrupted, and
// another replica goes on if the driver dies.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/cmd/cronfence/internal/config"
	"github.com/cronfence/cronfence/internal/adminview"
	"github.com/cronfence/cronfence/store"
)

// backfillFollowEvery is how often the command reads a backfill's
// progress while it follows it.
const backfillFollowEvery = time.Second

// backfillCmd is `cronfence backfill`.
type backfillCmd struct {
	Start  backfillStartCmd  `cmd:"" default:"withargs" hidden:"" help:"Ask for a backfill of JOB and follow it (the default: cronfence backfill JOB --from T1 --to T2)."`
	Ls     backfillLsCmd     `cmd:"" help:"List a job's backfills, newest first."`
	Show   backfillShowCmd   `cmd:"" help:"Show one backfill and its progress."`
	Cancel backfillCancelCmd `cmd:"" help:"Cancel a running backfill: no slot is claimed after it (a run in flight ends as it would)."`
}

func (c *backfillCmd) Help() string {
	return "cronfence backfill JOB --from T1 --to T2 runs the slots of JOB at or after T1 and before T2 that never ran " +
		"(--include-failed: the failed ones too), oldest first, one at a time, at most --rate a second, with " +
		"CRONFENCE_ORIGIN=backfill; a completed slot never runs again. --dry-run prints each slot and what the backfill " +
		"would do with it. The replicas that serve JOB drive it (serve must run): the command records it and follows its " +
		"progress until it ends; interrupted, it leaves the backfill running (cronfence backfill cancel JOB ID stops it). " +
		"Exit 0 done, 1 cancelled or failed runs, 2 bad input, 3 JOB has a running backfill."
}

// backfillFlags are where the backfill subcommands work: the database of
// --config, or --server.
type backfillFlags struct {
	serverFlags
	Config string `name:"config" type:"path" placeholder:"FILE" help:"The serve config file, for direct mode: its database, and its jobs' schedules."`
	By     string `name:"by" help:"Who, recorded with the backfill (direct mode; a server records its token's name). Defaults to $USER, else \"cli\"."`
}

type backfillStartCmd struct {
	backfillFlags
	Job           string `arg:"" help:"Job name."`
	From          string `name:"from" required:"" placeholder:"RFC3339" help:"The range's start (inclusive), e.g. 2026-12-01T00:00:00Z."`
	To            string `name:"to" required:"" placeholder:"RFC3339" help:"The range's end (exclusive), not ahead of now."`
	Rate          int    `name:"rate" placeholder:"N" help:"Start at most N slots a second (default: no bound but one run at a time)."`
	IncludeFailed bool   `name:"include-failed" help:"Run the failed slots of the range again too, one attempt more each."`
	DryRun        bool   `name:"dry-run" help:"Print each slot of the range and what the backfill would do with it; record nothing."`
	Detach        bool   `name:"detach" help:"Record the backfill and return, without following it."`
}

type backfillLsCmd struct {
	backfillFlags
	Job string `arg:"" help:"Job name."`
}

type backfillShowCmd struct {
	backfillFlags
	Job string `arg:"" help:"Job name."`
	ID  int64  `arg:"" help:"The backfill's ID."`
}

type backfillCancelCmd struct {
	backfillFlags
	Job string `arg:"" help:"Job name."`
	ID  int64  `arg:"" help:"The backfill's ID."`
}

func (c *backfillStartCmd) Run(a *app) error {
	req := client.BackfillCreate{From: c.From, To: c.To, IncludeFailed: c.IncludeFailed, Rate: c.Rate}
	for _, f := range []struct{ flag, text string }{{"--from", c.From}, {"--to", c.To}} {
		if _, err := time.Parse(time.RFC3339, f.text); err != nil {
			return usageError("%s %q: not an RFC 3339 instant such as 2026-12-01T00:00:00Z", f.flag, f.text)
		}
	}
	if c.Rate < 0 || c.Rate > store.MaxBackfillRate {
		return usageError("--rate must be from 0 (no bound) to %d a second, got %d", store.MaxBackfillRate, c.Rate)
	}
	be, err := c.backend(a, c.Job)
	if err != nil {
		return err
	}
	defer be.close()
	if c.DryRun {
		plan, err := be.plan(a.ctx, c.Job, req)
		if err != nil {
			return err
		}
		printPlan(a.stdout, plan)
		return nil
	}
	b, err := be.create(a.ctx, c.Job, req)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "backfill %d of %s: %d slots from %s to %s\n", b.ID, b.Job, b.Total, short(b.From), short(b.To))
	if warn := be.undriven(a.ctx, c.Job); warn != "" {
		fmt.Fprintln(a.stderr, "cronfence: warning: "+warn)
	}
	if c.Detach {
		return nil
	}
	return follow(a, be, b)
}

// follow prints b's progress until it ends, or the command is
// interrupted (the backfill goes on).
func follow(a *app, be backfillBackend, b client.Backfill) error {
	bar := progressBar{w: a.stderr, tty: isTerminal(a.stderr)}
	for b.State == string(store.BackfillRunning) {
		bar.show(b)
		select {
		case <-a.ctx.Done():
			bar.done()
			fmt.Fprintf(a.stderr, "cronfence: backfill %d goes on without this command; cronfence backfill show %s %d follows it, cancel stops it\n", b.ID, b.Job, b.ID)
			return nil
		case <-time.After(backfillFollowEvery):
		}
		var err error
		if b, err = be.get(a.ctx, b.Job, b.ID); err != nil {
			if a.ctx.Err() != nil {
				continue
			}
			return err
		}
	}
	bar.show(b)
	bar.done()
	printBackfill(a.stdout, b)
	switch {
	case b.State == string(store.BackfillCancelled):
		return &exitError{code: exitFailure, err: fmt.Errorf("backfill %d was cancelled by %s", b.ID, b.CancelledBy)}
	case b.Counts.Failed > 0:
		return &exitError{code: exitFailure, err: fmt.Errorf("backfill %d: %d of the slots it ran failed (cronfence logs %s)", b.ID, b.Counts.Failed, b.Job)}
	}
	return nil
}

func (c *backfillLsCmd) Run(a *app) error {
	be, err := c.backend(a, c.Job)
	if err != nil {
		return err
	}
	defer be.close()
	list, err := be.list(a.ctx, c.Job)
	if err != nil {
		return err
	}
	for _, b := range list.Backfills {
		fmt.Fprintf(a.stdout, "%d\t%s\t%s → %s\t%d/%d\tran %d, failed %d\tby %s\n", b.ID, b.State, short(b.From), short(b.To),
			b.Handled, b.Total, b.Counts.Ran, b.Counts.Failed, b.CreatedBy)
	}
	return nil
}

func (c *backfillShowCmd) Run(a *app) error {
	be, err := c.backend(a, c.Job)
	if err != nil {
		return err
	}
	defer be.close()
	b, err := be.get(a.ctx, c.Job, c.ID)
	if err != nil {
		return err
	}
	printBackfill(a.stdout, b)
	return nil
}

func (c *backfillCancelCmd) Run(a *app) error {
	be, err := c.backend(a, c.Job)
	if err != nil {
		return err
	}
	defer be.close()
	b, err := be.cancel(a.ctx, c.Job, c.ID)
	if err != nil {
		return err
	}
	printBackfill(a.stdout, b)
	return nil
}

// printPlan prints a dry run: a slot a line, and the totals.
func printPlan(w io.Writer, plan client.BackfillPlan) {
	counts := map[string]int{}
	var order []string
	for _, s := range plan.Slots {
		fmt.Fprintf(w, "%s\t%s\n", s.Slot, s.Outcome)
		if counts[s.Outcome] == 0 {
			order = append(order, s.Outcome)
		}
		counts[s.Outcome]++
	}
	parts := make([]string, len(order))
	for i, o := range order {
		parts[i] = fmt.Sprintf("%d %s", counts[o], o)
	}
	fmt.Fprintf(w, "%d slots: %s\n", len(plan.Slots), strings.Join(parts, ", "))
}

// printBackfill prints a backfill and its counts.
func printBackfill(w io.Writer, b client.Backfill) {
	c := b.Counts
	fmt.Fprintf(w, "backfill %d of %s: %s, %d/%d slots handled (from %s to %s, by %s", b.ID, b.Job, b.State, b.Handled, b.Total,
		short(b.From), short(b.To), b.CreatedBy)
	if b.CancelledBy != "" {
		fmt.Fprintf(w, ", cancelled by %s", b.CancelledBy)
	}
	fmt.Fprintln(w, ")")
	if b.Driver != "" {
		fmt.Fprintf(w, "  driven by %s\n", b.Driver)
	}
	fmt.Fprintf(w, "  ran %d, failed %d; left: completed before %d, failed before %d, skipped %d, running %d, paused %d, excluded %d, taken %d\n",
		c.Ran, c.Failed, c.Completed, c.FailedBefore, c.Skipped, c.Running, c.Paused, c.Excluded, c.Taken)
}

// progressBar draws a backfill's progress on a terminal (one line,
// redrawn), or a line per change elsewhere.
type progressBar struct {
	w    io.Writer
	tty  bool
	last int
}

func (p *progressBar) show(b client.Backfill) {
	if !p.tty && b.Handled == p.last && p.last != 0 {
		return
	}
	p.last = b.Handled
	const width = 30
	filled := 0
	if b.Total > 0 {
		filled = width * b.Handled / b.Total
	}
	line := fmt.Sprintf("[%s%s] %d/%d ran %d failed %d", strings.Repeat("#", filled), strings.Repeat(".", width-filled), b.Handled, b.Total,
		b.Counts.Ran, b.Counts.Failed)
	if p.tty {
		fmt.Fprintf(p.w, "\r%s", line)
		return
	}
	fmt.Fprintln(p.w, line)
}

func (p *progressBar) done() {
	if p.tty {
		fmt.Fprintln(p.w)
	}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// backfillBackend is where the backfill subcommands work.
type backfillBackend interface {
	plan(ctx context.Context, job string, req client.BackfillCreate) (client.BackfillPlan, error)
	create(ctx context.Context, job string, req client.BackfillCreate) (client.Backfill, error)
	get(ctx context.Context, job string, id int64) (client.Backfill, error)
	list(ctx context.Context, job string) (client.BackfillList, error)
	cancel(ctx context.Context, job string, id int64) (client.Backfill, error)
	// undriven says why no replica may drive job's backfill; "" when one
	// may, or it cannot tell.
	undriven(ctx context.Context, job string) string
	close()
}

// backend is --server's API, else the database of --config with its
// jobs registered on a scheduler that is never started.
func (f *backfillFlags) backend(a *app, job string) (backfillBackend, error) {
	if err := validJob(job); err != nil {
		return nil, err
	}
	if f.Server != "" {
		return &serverBackfills{s: &f.serverFlags}, nil
	}
	if f.Config == "" {
		return nil, usageError("backfill needs --config FILE (the job's schedule and the database) or --server URL")
	}
	file, err := loadConfig(a.globals, f.Config, config.Reads{Schedules: true})
	if err != nil {
		return nil, err
	}
	i, err := declaredJob(file, job)
	if err != nil {
		return nil, err
	}
	db, err := openDirect(a, file)
	if err != nil {
		return nil, err
	}
	s, err := cronfence.New(cronfence.Config{Store: db.Store, DisableTimers: true, Exclude: file.Exclude,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err == nil {
		j := schedulerJob(file.Jobs[i], 0)
		j.Handler = func(context.Context, *cronfence.Run) error {
			return errors.New("cronfence: a backfill command runs no job")
		}
		err = s.Register(j)
	}
	if err != nil {
		db.close()
		return nil, err
	}
	by := f.By
	if by == "" {
		by = os.Getenv("USER")
	}
	if by == "" {
		by = "cli"
	}
	return &directBackfills{db: db, s: s, by: by}, nil
}

// directBackfills works on the database.
type directBackfills struct {
	db *database
	s  *cronfence.Scheduler
	by string
}

func (d *directBackfills) params(req client.BackfillCreate) cronfence.BackfillParams {
	from, _ := time.Parse(time.RFC3339, req.From) // checked by the command
	to, _ := time.Parse(time.RFC3339, req.To)
	return cronfence.BackfillParams{From: from, To: to, IncludeFailed: req.IncludeFailed, Rate: req.Rate, By: d.by}
}

func (d *directBackfills) plan(ctx context.Context, job string, req client.BackfillCreate) (client.BackfillPlan, error) {
	plan, err := d.s.BackfillPlan(ctx, job, d.params(req))
	return adminview.BackfillPlanOf(plan), d.fail(err)
}

func (d *directBackfills) create(ctx context.Context, job string, req client.BackfillCreate) (client.Backfill, error) {
	b, err := d.s.Backfill(ctx, job, d.params(req))
	return adminview.BackfillOf(b), d.fail(err)
}

func (d *directBackfills) get(ctx context.Context, job string, id int64) (client.Backfill, error) {
	b, err := d.s.GetBackfill(ctx, id)
	if err == nil && b.Job != job {
		err = store.ErrNotFound
	}
	return adminview.BackfillOf(b), d.fail(err)
}

func (d *directBackfills) list(ctx context.Context, job string) (client.BackfillList, error) {
	list, err := d.s.Backfills(ctx, store.BackfillListParams{Job: job})
	out := client.BackfillList{Backfills: make([]client.Backfill, len(list))}
	for i, b := range list {
		out.Backfills[i] = adminview.BackfillOf(b)
	}
	return out, d.fail(err)
}

func (d *directBackfills) cancel(ctx context.Context, job string, id int64) (client.Backfill, error) {
	if _, err := d.get(ctx, job, id); err != nil {
		return client.Backfill{}, err
	}
	b, err := d.s.CancelBackfill(ctx, id, d.by)
	return adminview.BackfillOf(b), d.fail(err)
}

// undriven looks for a live replica with timers that registers job.
func (d *directBackfills) undriven(ctx context.Context, job string) string {
	reps, err := d.db.ReplicaList(ctx)
	if err != nil {
		return ""
	}
	now, err := d.db.Now(ctx)
	if err != nil {
		return ""
	}
	for _, r := range reps {
		if !r.Timers || now.Sub(r.HeartbeatAt) > defaultStaleAfter {
			continue
		}
		for _, j := range r.Jobs {
			if j.Name == job {
				return ""
			}
		}
	}
	return fmt.Sprintf("no live replica in %s serves %s: the backfill waits until one does (cronfence serve)", d.db.where, job)
}

func (d *directBackfills) close() { d.db.close() }

// fail gives a refusal its exit status: 2 for bad input, 3 for a running
// backfill, 1 for an unknown backfill or a failing store.
func (d *directBackfills) fail(err error) error {
	var conflict *store.ConflictError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &conflict):
		return &exitError{code: exitConflict, err: fmt.Errorf("%s has a running backfill (%d) in %s: wait for it, or cancel it", conflict.Name, conflict.Current, d.db.where)}
	case errors.Is(err, cronfence.ErrBackfillEnded):
		return &exitError{code: exitConflict, err: err}
	case errors.Is(err, store.ErrNotFound):
		return &exitError{code: exitFailure, err: fmt.Errorf("no such backfill in %s", d.db.where)}
	}
	return wrapInvalid(err)
}

// serverBackfills speaks to a running serve's REST API.
type serverBackfills struct {
	s *serverFlags
}

func (c *serverBackfills) do(ctx context.Context, f func(ctx context.Context, cl *client.Client) error) error {
	if c.s.Token == "" {
		return usageError("--server needs --token (or CRONFENCE_TOKEN)")
	}
	ctx, cancel := context.WithTimeout(ctx, httpTimeout)
	defer cancel()
	return serverError(f(ctx, &client.Client{Base: c.s.Server, Token: c.s.Token}))
}

func (c *serverBackfills) plan(ctx context.Context, job string, req client.BackfillCreate) (p client.BackfillPlan, err error) {
	err = c.do(ctx, func(ctx context.Context, cl *client.Client) (e error) { p, e = cl.PlanBackfill(ctx, job, req); return })
	return p, err
}

func (c *serverBackfills) create(ctx context.Context, job string, req client.BackfillCreate) (b client.Backfill, err error) {
	err = c.do(ctx, func(ctx context.Context, cl *client.Client) (e error) {
		b, e = cl.CreateBackfill(ctx, job, req)
		return
	})
	return b, err
}

func (c *serverBackfills) get(ctx context.Context, job string, id int64) (b client.Backfill, err error) {
	err = c.do(ctx, func(ctx context.Context, cl *client.Client) (e error) { b, e = cl.Backfill(ctx, job, id); return })
	return b, err
}

func (c *serverBackfills) list(ctx context.Context, job string) (l client.BackfillList, err error) {
	err = c.do(ctx, func(ctx context.Context, cl *client.Client) (e error) { l, e = cl.Backfills(ctx, job); return })
	return l, err
}

func (c *serverBackfills) cancel(ctx context.Context, job string, id int64) (b client.Backfill, err error) {
	err = c.do(ctx, func(ctx context.Context, cl *client.Client) (e error) { b, e = cl.CancelBackfill(ctx, job, id); return })
	return b, err
}

// undriven cannot tell through the API: the server's own replica serves
// its jobs.
func (c *serverBackfills) undriven(context.Context, string) string { return "" }

func (c *serverBackfills) close() {}
