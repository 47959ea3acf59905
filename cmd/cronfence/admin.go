package main

// The admin commands: pause, resume, unset, logs, trigger and jobs. Each
// works directly against the database (the one --config FILE names, as
// serve resolves it, else the global --database / --sqlite flags) or, with
// --server, against a running `serve --listen` through its admin REST API.
// In direct mode they never create or migrate the database (only migrate
// and serve do) and refuse a job the replicas do not know, as the API's
// 404 does: a command pointed at the wrong database or job says so rather
// than succeeding where no replica looks.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/cmd/cronfence/internal/config"
	"github.com/cronfence/cronfence/internal/adminapi"
	"github.com/cronfence/cronfence/schedule"
	"github.com/cronfence/cronfence/store"
)

// exitBusy is the exit status of `trigger` when a run holds the job's lease.
const exitBusy = 3

// httpTimeout bounds one request to a server.
const httpTimeout = 30 * time.Second

// serverFlags select server mode.
type serverFlags struct {
	Server string `name:"server" env:"CRONFENCE_SERVER" placeholder:"URL" help:"Base URL of a cronfence serve --listen process (http://host:port). Empty: work directly on the database."`
	Token  string `name:"token" env:"CRONFENCE_TOKEN" placeholder:"TOKEN" help:"Bearer token for --server."`
}

// call sends one request to the server (adminapi.Client, beside the API it
// speaks) and decodes a 2xx answer into out. A non-2xx answer is returned
// as *adminapi.Error.
func (s *serverFlags) call(ctx context.Context, method, path string, body, out any) error {
	if s.Token == "" {
		return usageError("--server needs --token (or CRONFENCE_TOKEN)")
	}
	if u, err := url.Parse(s.Server); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageError("--server %q: not an http:// or https:// URL", s.Server)
	}
	ctx, cancel := context.WithTimeout(ctx, httpTimeout)
	defer cancel()
	c := adminapi.Client{Base: s.Server, Token: s.Token}
	return c.Do(ctx, method, path, body, out)
}

func jobPath(job string) string { return adminapi.JobPath(job) }

func timeStr(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}

// short formats an RFC 3339 string for a table, "-" when nil.
func short(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		return *s
	}
	return t.UTC().Format("2006-01-02T15:04:05Z")
}

// resultText is a run's outcome for a table.
func resultText(r adminapi.Run) string {
	switch {
	case r.Result.Skipped:
		return "skipped: " + r.Result.Reason
	case r.FinishedAt == nil && r.Error == nil && !r.Success:
		return "running"
	case r.Success:
		return "ok"
	case r.Result.Reason == store.ReasonInterrupted && r.Error != nil:
		return *r.Error // "interrupted on attempt 1 of 3: …", found dead by a replica
	case r.Error != nil:
		return "FAILED: " + *r.Error
	default:
		return "FAILED"
	}
}

// durationText is how long a run took, for a table: "-" for a skip (it
// took no time) and a run not finished.
func durationText(r adminapi.Run) string {
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
func slotText(r adminapi.Run) string {
	if r.Manual || r.Slot == nil {
		return "manual"
	}
	return short(r.Slot)
}

// validJob checks a job name argument.
func validJob(job string) error {
	if err := store.ValidateName("job name", job); err != nil {
		return usageError("%w", err)
	}
	return nil
}

// --- direct mode: the database and the job ---

// loadConfig loads the --config file of a direct-mode command, nil without
// one, requiring the variables of what r says it reads and of its database:
// unless --database overrides it (fileReads). A file that cannot be loaded
// is a usage error, as for serve.
func loadConfig(g *Globals, path string, r config.Reads) (*config.File, error) {
	if path == "" {
		return nil, nil
	}
	f, err := config.LoadFor(path, g.fileReads(r))
	if err != nil {
		return nil, &exitError{code: exitUsage, err: err}
	}
	return f, nil
}

// fileReads is r, reading the file's database: only when these flags do
// not override it (configGlobals).
func (g *Globals) fileReads(r config.Reads) config.Reads {
	r.Database = g.Database == ""
	return r
}

// openDirect opens the database of a direct-mode command: the one of the
// config file f exactly as serve resolves it (configGlobals), else the one
// of the global flags; as it is (openExisting), never created or migrated.
func openDirect(a *app, f *config.File) (*database, error) {
	g := a.globals
	if f != nil {
		g = configGlobals(g, f)
	}
	return g.openExisting(a.ctx)
}

// unknownJob is the error for a job the replicas do not know: exit 1, as
// through --server, where the API answers 404 CRON_JOB_NOT_FOUND.
func unknownJob(format string, args ...any) error {
	return &exitError{code: exitFailure, err: fmt.Errorf(format, args...)}
}

// declaredJob returns the index of job in the config file f, or the
// unknown-job error: with --config, the file's jobs are the known ones, as
// a server knows the jobs of its file.
func declaredJob(f *config.File, job string) (int, error) {
	if i := slices.IndexFunc(f.Jobs, func(j config.Job) bool { return j.Name == job }); i >= 0 {
		return i, nil
	}
	const shown = 10
	names := make([]string, 0, shown)
	for _, j := range f.Jobs[:min(len(f.Jobs), shown)] {
		names = append(names, strconv.Quote(j.Name))
	}
	more := ""
	if len(f.Jobs) > shown {
		more = fmt.Sprintf(" and %d more", len(f.Jobs)-shown)
	}
	return -1, unknownJob("no job named %q in %s (it declares %s%s)", job, f.Path, strings.Join(names, ", "), more)
}

// storeKnows returns the unknown-job error unless the store has a trace of
// job: a run row (Prune keeps each job's latest, so a job that ever ran or
// was skipped keeps one), an override (so a stale one can still be
// removed), or a replica in the registry that registers it (a running
// one, or one gone without a graceful stop and not pruned yet).
// That is what direct mode without --config can know of the replicas' jobs:
// a job declared but never run, on replicas that are not running, needs
// --config.
func storeKnows(ctx context.Context, db *database, job string) error {
	runs, err := db.RunList(ctx, store.RunListParams{Job: job, Limit: 1})
	if err != nil {
		return wrapInvalid(fmt.Errorf("listing the runs of %s in %s: %w", job, db.where, err))
	}
	if len(runs) > 0 {
		return nil
	}
	states, err := db.JobStateList(ctx)
	if err != nil {
		return fmt.Errorf("reading the job states in %s: %w", db.where, err)
	}
	if slices.ContainsFunc(states, func(s store.JobState) bool { return s.Job == job }) {
		return nil
	}
	reps, err := db.ReplicaList(ctx)
	if err != nil {
		return fmt.Errorf("listing the replicas in %s: %w", db.where, err)
	}
	for _, r := range reps {
		if slices.ContainsFunc(r.Jobs, func(j store.ReplicaJob) bool { return j.Name == job }) {
			return nil
		}
	}
	return unknownJob("no job named %q in %s: it has no runs, no override, and no replica registers it. "+
		"Check the name; for a job that has not run yet, give --config FILE (the serve config declaring it)", job, db.where)
}

// directJob opens the database of a direct-mode command on job (see
// openDirect) once job is known: declared in the --config file, or
// without one, known to the store (storeKnows).
func directJob(a *app, configPath, job string) (*database, error) {
	f, err := loadConfig(a.globals, configPath, config.Reads{}) // the database and the job names
	if err != nil {
		return nil, err
	}
	if f != nil {
		if _, err := declaredJob(f, job); err != nil {
			return nil, err
		}
	}
	db, err := openDirect(a, f)
	if err != nil {
		return nil, err
	}
	if f == nil {
		if err := storeKnows(a.ctx, db, job); err != nil {
			db.close()
			return nil, err
		}
	}
	return db, nil
}

// --- pause / resume / unset ---

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

func overrideText(e *bool) string {
	switch {
	case e == nil:
		return "none (follows the config)"
	case *e:
		return "enabled"
	default:
		return "paused"
	}
}

func setOverride(a *app, s *serverFlags, configPath, job string, enabled *bool, note, by string) error {
	if err := validJob(job); err != nil {
		return err
	}
	if s.Server != "" {
		var v adminapi.Job
		if err := s.call(a.ctx, http.MethodPut, jobPath(job), map[string]any{"enabled": enabled, "note": note}, &v); err != nil {
			return err
		}
		o := adminapi.Override{}
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
	db, err := directJob(a, configPath, job)
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

func enabledText(b bool) string {
	if b {
		return "enabled"
	}
	return "disabled"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func noteText(n string) string {
	if n == "" {
		return ""
	}
	return fmt.Sprintf(" (note: %q)", n)
}

// --- logs ---

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
func (c *logsCmd) lister(a *app) (list func(limit int) ([]adminapi.Run, error), done func(), err error) {
	if c.Server != "" {
		return func(limit int) ([]adminapi.Run, error) {
			var out struct {
				JobID string         `json:"jobId"`
				Logs  []adminapi.Run `json:"logs"`
			}
			err := c.call(a.ctx, http.MethodGet, jobPath(c.Job)+"/logs?limit="+strconv.Itoa(limit), nil, &out)
			return out.Logs, err
		}, func() {}, nil
	}
	db, err := directJob(a, c.Config, c.Job)
	if err != nil {
		return nil, nil, err
	}
	return func(limit int) ([]adminapi.Run, error) {
		rs, err := db.RunList(a.ctx, store.RunListParams{Job: c.Job, Limit: limit})
		if err != nil {
			return nil, wrapInvalid(fmt.Errorf("listing the runs of %s in %s: %w", c.Job, db.where, err))
		}
		runs := make([]adminapi.Run, 0, len(rs))
		for _, r := range rs {
			runs = append(runs, adminapi.RunOf(r))
		}
		return runs, nil
	}, db.close, nil
}

// follow prints runs (newest first) oldest first, then every c.Every the
// runs that ended since, in the order they ended, until the command is
// interrupted. A run's row is written when it ends, and ids grow in the
// order rows are written: the rows with an id above the highest printed
// are the runs that ended since, whenever they started.
func (c *logsCmd) follow(a *app, list func(int) ([]adminapi.Run, error), runs []adminapi.Run) error {
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
		var fresh []adminapi.Run
		for _, r := range newest {
			if r.ID > last {
				fresh = append(fresh, r)
			}
		}
		slices.SortFunc(fresh, func(a, b adminapi.Run) int { return cmp.Compare(a.ID, b.ID) })
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
func (c *logsCmd) print(a *app, runs []adminapi.Run, logs bool) error {
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

// --- trigger ---

type triggerCmd struct {
	serverFlags
	Job       string        `arg:"" help:"Job name."`
	Config    string        `name:"config" type:"path" placeholder:"FILE" help:"The serve config file holding the job's command, for direct mode (its database: and sqlite: apply unless --database is given)."`
	KillGrace time.Duration `name:"kill-grace" default:"10s" help:"Direct mode: time between SIGTERM and SIGKILL when the command is cancelled (timeout, lease lost, SIGTERM or SIGINT to trigger)."`
	JSON      bool          `name:"json" help:"With --server: print the server's answer, the REST API's JSON, instead of a sentence."`
}

func (c *triggerCmd) Help() string {
	return "Direct mode (no --server) runs the job's command here, under the job's lease like any run, and waits for it: " +
		"exit 0 when it succeeded, 1 when it failed, 3 when another run holds the lease (the refusal is recorded as a skipped run). " +
		"The tail of its output is in the run's logs (cronfence logs JOB). " +
		"With --server, the server starts the run and trigger says so without waiting (--json: the server's answer); 3 likewise when a run holds the lease."
}

func (c *triggerCmd) Run(a *app) error {
	if err := validJob(c.Job); err != nil {
		return err
	}
	if c.Server == "" {
		return c.direct(a)
	}
	var out json.RawMessage
	err := c.call(a.ctx, http.MethodPost, jobPath(c.Job)+"/run", nil, &out)
	var ae *adminapi.Error
	if errors.As(err, &ae) && ae.Status == http.StatusConflict {
		if c.JSON {
			return &exitError{code: exitBusy, err: ae}
		}
		// The sentence of direct mode, from the answer's holder.
		var d struct {
			Holder adminapi.Holder `json:"holder"`
		}
		_ = json.Unmarshal(ae.Details, &d)
		return &exitError{code: exitBusy, err: busyTrigger(c.Job, d.Holder.Owner, d.Holder.Generation)}
	}
	if err != nil {
		return err
	}
	if c.JSON {
		fmt.Fprintln(a.stdout, string(bytes.TrimSpace(out)))
		return nil
	}
	var run struct {
		Owner      string `json:"owner"`
		Generation int64  `json:"generation"`
	}
	if err := json.Unmarshal(out, &run); err != nil {
		return fmt.Errorf("trigger: the server's answer: %w", err)
	}
	fmt.Fprintf(a.stdout, "%s: the run (owner %s, generation %d) started on the server; cronfence logs -f %s follows it\n",
		c.Job, orDash(run.Owner), run.Generation, c.Job)
	return nil
}

// direct runs the job on this process: a scheduler without timers on the
// replicas' store, with only this job, mapped exactly as serve maps it, so
// the run takes the same lease and leaves the same rows as one by serve.
func (c *triggerCmd) direct(a *app) error {
	if c.Config == "" {
		return usageError("trigger %q needs --config FILE (the job's command) to run it directly on the database, or --server URL to ask a running serve", c.Job)
	}
	if c.KillGrace <= 0 {
		return usageError("--kill-grace must be positive, got %s", c.KillGrace)
	}
	f, err := loadConfig(a.globals, c.Config, config.Reads{Run: c.Job})
	if err != nil {
		return err
	}
	i, err := declaredJob(f, c.Job)
	if err != nil {
		return err
	}
	db, err := openDirect(a, f)
	if err != nil {
		return err
	}
	defer db.close()

	// The end of the one run this scheduler can start: no timers, one job.
	ended := make(chan cronfence.RunEndEvent, 1)
	observer := cronfence.ObserverFunc(func(e cronfence.Event) {
		if end, ok := e.(cronfence.RunEndEvent); ok && end.Job == c.Job && end.Origin == cronfence.OriginManual {
			select {
			case ended <- end:
			default:
			}
		}
	})
	// Warnings and the run's error on stderr; the command's output lines
	// (logged at info) go to the run row only.
	logger := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// Stop comes only when the run ended or the user interrupted trigger:
	// then the run is cancelled at once (the command still gets
	// --kill-grace between SIGTERM and SIGKILL), with no shutdown grace.
	s, err := cronfence.New(cronfence.Config{Store: db.Store, Observer: observer, Logger: logger, DisableTimers: true, ShutdownGrace: time.Nanosecond})
	if err != nil {
		return err
	}
	if err := s.Register(schedulerJob(f.Jobs[i], c.KillGrace)); err != nil {
		return usageError("%s:%d: jobs[%d]: %w", f.Path, f.Jobs[i].Line, i, err)
	}
	if err := s.Start(a.ctx); err != nil {
		return fmt.Errorf("starting the scheduler on %s: %w", db.where, err)
	}
	run, err := s.Trigger(a.ctx, c.Job)
	if err != nil {
		_ = s.Stop(context.Background()) // nothing runs
		var busy *cronfence.AlreadyExecutingError
		if errors.As(err, &busy) {
			// The same exit status and sentence as a 409 from a server.
			return &exitError{code: exitBusy, err: busyTrigger(c.Job, busy.Holder.Owner, busy.Holder.Generation)}
		}
		return wrapInvalid(fmt.Errorf("trigger %q in %s: %w", c.Job, db.where, err))
	}

	var end cronfence.RunEndEvent
	select {
	case end = <-ended:
		_ = s.Stop(context.Background()) // the run has ended: releases the liveness lock
	case <-a.ctx.Done():
		fmt.Fprintf(a.stderr, "cronfence: trigger %q: interrupted; cancelling the run\n", c.Job)
		_ = s.Stop(context.Background()) // cancels the run at once (no grace: see New above) and waits for its end
		end = <-ended
	}
	recorded := ""
	if !end.Recorded {
		recorded = "; the store could not record its end"
	}
	if end.Outcome != cronfence.RunSucceeded {
		return &exitError{code: exitFailure, err: fmt.Errorf("trigger %q: the run (owner %s, generation %d) failed after %s%s; its output and error are in the run's logs",
			c.Job, run.Owner, run.Generation, end.Duration.Round(time.Millisecond), recorded)}
	}
	fmt.Fprintf(a.stdout, "%s: the run (owner %s, generation %d) succeeded in %s%s\n",
		c.Job, run.Owner, run.Generation, end.Duration.Round(time.Millisecond), recorded)
	return nil
}

// busyTrigger is trigger's error when a run holds the job's lease, the
// same in direct mode and through a server.
func busyTrigger(job, holder string, generation int64) error {
	return fmt.Errorf("trigger: job %q is already executing (lease held by %s at generation %d); not run, the refusal is recorded as a skipped run",
		job, orDash(holder), generation)
}

// configGlobals returns the global flags with the database of config file
// f, the one its serve replicas use: --database when given, else the file's
// database:, else its sqlite: file (--sqlite does not apply).
func configGlobals(g *Globals, f *config.File) *Globals {
	c := *g
	c.config = f.Path
	if c.Database == "" {
		c.Database = f.Database
	}
	if c.Database == "" {
		c.SQLite = f.SQLitePath
	}
	return &c
}

// --- jobs ---

type jobsCmd struct {
	serverFlags
	Config string `name:"config" type:"path" placeholder:"FILE" help:"The serve config file, for the job list in direct mode (its database: and sqlite: apply unless --database is given)."`
}

func (c *jobsCmd) Run(a *app) error {
	var jobs []adminapi.Job
	if c.Server != "" {
		var out struct {
			Jobs []adminapi.Job `json:"jobs"`
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
func nextText(j adminapi.Job) string {
	switch {
	case j.Enabled:
		return short(j.Next)
	case j.Override != nil && j.Override.Enabled != nil:
		return "paused"
	default:
		return "disabled"
	}
}

func (c *jobsCmd) direct(a *app) ([]adminapi.Job, error) {
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
	infos := make([]cronfence.JobInfo, len(f.Jobs))
	for i, j := range f.Jobs {
		info := cronfence.JobInfo{Job: cronfence.Job{
			Name: j.Name, Schedule: j.Schedule, TimeZone: j.TimeZone, Overlap: cronfence.Overlap(j.Overlap), Disabled: j.Disabled,
		}}
		if loc, err := time.LoadLocation(j.TimeZone); err == nil {
			if s, err := schedule.Parse(j.Schedule, &schedule.Options{Location: loc}); err == nil {
				info.Next = s.Next(now)
			}
		}
		infos[i] = info
	}
	// The same view the REST API builds, from the same store reads (the
	// lease's state judged by the database clock).
	jobs, op, err := adminapi.Jobs(a.ctx, db, infos)
	if err != nil {
		return nil, fmt.Errorf("%s in %s: %w", op, db.where, err)
	}
	return jobs, nil
}
