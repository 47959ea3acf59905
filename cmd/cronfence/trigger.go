package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/cmd/cronfence/internal/config"
)

// exitBusy is the exit status of `trigger` when a run holds the job's lease.
const exitBusy = 3

// triggerCmd is `cronfence trigger`.
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
	var ae *client.Error
	if errors.As(err, &ae) && ae.Status == http.StatusConflict {
		if c.JSON {
			return &exitError{code: exitBusy, err: ae}
		}
		// The sentence of direct mode, from the answer's holder.
		var d struct {
			Holder client.Holder `json:"holder"`
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
