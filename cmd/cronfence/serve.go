package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin"
	"github.com/cronfence/cronfence/cmd/cronfence/internal/command"
	"github.com/cronfence/cronfence/cmd/cronfence/internal/config"
	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/internal/traceid"
)

// serveCmd is `cronfence serve`.
type serveCmd struct {
	Config        string        `name:"config" short:"c" required:"" type:"path" placeholder:"FILE" help:"The YAML file of jobs (see examples/cronfence.yaml)."`
	LogFormat     string        `name:"log-format" enum:"text,json" default:"text" env:"CRONFENCE_LOG_FORMAT" help:"Log format on stderr: text or json."`
	KillGrace     time.Duration `name:"kill-grace" default:"10s" help:"Time between SIGTERM and SIGKILL when a job's command is cancelled (lease lost, timeout, shutdown)."`
	ShutdownGrace time.Duration `name:"shutdown-grace" default:"30s" help:"On SIGTERM or SIGINT, how long running commands may finish before they are cancelled; a second SIGTERM or SIGINT cancels them at once."`
	Listen        string        `name:"listen" env:"CRONFENCE_LISTEN" placeholder:"ADDR" help:"Serve the dashboard (/), the admin REST API (/api/admin/cron), /healthz, /readyz and Prometheus /metrics on this address, e.g. 127.0.0.1:8080. Bearer tokens come from the file's tokens:; /metrics needs none, as Prometheus expects."`
	Scheduler     bool          `name:"scheduler" default:"true" env:"CRONFENCE_SCHEDULER" help:"Run the timers. --scheduler=false serves manual runs and pauses only, while other replicas (workers) fire the jobs."`
}

func (c *serveCmd) Help() string {
	return "The database is --database (or CRONFENCE_DATABASE_URL), else the file's database:, " +
		"else the SQLite file of the file's sqlite: (default cronfence.db beside the config file); --sqlite does not apply. " +
		"Every replica running the same config on the same database shares the slots: each runs once."
}

func (c *serveCmd) Run(a *app) error {
	if c.KillGrace <= 0 {
		return usageError("--kill-grace must be positive, got %s", c.KillGrace)
	}
	if c.ShutdownGrace <= 0 {
		return usageError("--shutdown-grace must be positive, got %s", c.ShutdownGrace)
	}
	f, err := config.LoadFor(c.Config, a.globals.fileReads(config.Everything))
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if c.Listen != "" {
		// Before anything is opened: a dashboard on the network with a
		// guessable token is refused, not served.
		if err := checkListenTokens(c.Listen, f.Path, f.Tokens); err != nil {
			return usageError("%w", err)
		}
	}

	var h slog.Handler
	if c.LogFormat == "json" {
		h = slog.NewJSONHandler(a.stderr, nil)
	} else {
		h = slog.NewTextHandler(a.stderr, nil)
	}
	logger := slog.New(h)
	if c.Listen != "" && len(f.Tokens) == 0 {
		logger.Warn("cronfence: --listen without tokens: the dashboard and the REST API refuse every request (only /healthz, /readyz and /metrics answer); add tokens: to the config",
			"config", f.Path)
	}

	jobs := make([]cronfence.Job, len(f.Jobs))
	for i, j := range f.Jobs {
		jobs[i] = schedulerJob(j, c.KillGrace)
	}

	g := configGlobals(a.globals, f) // a copy: g.tracer is this serve's
	obs, err := newObservability(f, logger)
	if err != nil {
		return err
	}
	defer obs.close(logger)
	g.tracer = obs.tracer()
	g.warm = true
	db, err := g.openMigrated(a.ctx)
	if err != nil {
		return err
	}
	defer db.close()

	clk, err := testClockOffset(logger)
	if err != nil {
		return err
	}
	s, err := cronfence.New(withSchedules(withHistory(withMonitor(cronfence.Config{Store: obs.instrument(db.Store), Observer: obs.observer(), Logger: logger, ShutdownGrace: c.ShutdownGrace, DisableTimers: !c.Scheduler, Clock: clk, Exclude: f.Exclude}, f.Monitor), f.History), f.Schedules))
	if err != nil {
		return err
	}
	for i, j := range jobs {
		if err := s.Register(j); err != nil {
			return usageError("%s:%d: jobs[%d]: %w", f.Path, f.Jobs[i].Line, i, err)
		}
	}
	if err := registerKinds(s, f, c.KillGrace); err != nil {
		return err
	}
	if err := obs.watchLeases(s, logger); err != nil {
		return err
	}
	if err := s.Start(a.ctx); err != nil {
		return fmt.Errorf("starting the scheduler on %s: %w", db.where, err)
	}
	var srv *http.Server
	if c.Listen != "" {
		ln, err := net.Listen("tcp", c.Listen)
		if err != nil {
			_ = s.Stop(context.Background())
			return fmt.Errorf("--listen %s: %w", c.Listen, err)
		}
		tokens := make([]admin.Token, len(f.Tokens))
		for i, t := range f.Tokens {
			tokens[i] = admin.Token{Name: t.Name, Role: t.Role, Secret: t.Token}
		}
		// The REST API under /api/, the dashboard at / (same tokens), as
		// any service mounts them. Replicas are live by the checks' own
		// bound, monitor.replica_stale.
		api, err := admin.NewHandler(s, admin.Options{Tokens: tokens, Logger: logger, ReplicaLiveFor: f.Monitor.ReplicaStale})
		if err != nil {
			_ = ln.Close()
			_ = s.Stop(context.Background())
			return fmt.Errorf("the admin API: %w", err)
		}
		srv = &http.Server{
			Handler:           obs.mount(api), // and GET /metrics, without a token
			ReadHeaderTimeout: 10 * time.Second,
		}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error("cronfence: the admin API stopped", "error", err)
			}
		}()
		logger.Info("cronfence: admin API listening", "addr", ln.Addr().String(), "tokens", len(tokens))
	}
	logger.Info("cronfence: serving", "config", f.Path, "jobs", len(jobs), "kinds", len(f.Kinds), "shell_schedules", f.Schedules.AllowShell, "database", db.where, "timers", c.Scheduler)

	<-a.ctx.Done()
	logger.Info("cronfence: stopping; running commands have the shutdown grace to finish", "grace", c.ShutdownGrace)
	if srv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = srv.Shutdown(sctx)
		cancel()
	}
	// A second signal cancels the running commands without waiting out the grace.
	stopCtx, stopForce := a.forceContext(func() { logger.Warn("cronfence: second signal; cancelling running commands now") })
	defer stopForce()
	if err := s.Stop(stopCtx); err != nil {
		return fmt.Errorf("stopping the scheduler: %w", err)
	}
	logger.Info("cronfence: stopped")
	return nil
}

// testClockOffsetEnv shifts the scheduler's clock by a duration ("-3m"),
// and the instant `lock --schedule` picks its slot from. Test-only: the
// chaos suite (e2e/chaos) uses it to run a replica whose host clock is
// wrong, the lock tests to run a host in an earlier slot. Leases and claims
// are judged by the database clock either way, which is what the tests
// show. Never set it in production.
const testClockOffsetEnv = "CRONFENCE_TEST_CLOCK_OFFSET"

// testOffset returns the offset testClockOffsetEnv asks for, and false when
// it is unset.
func testOffset() (time.Duration, bool, error) {
	v := os.Getenv(testClockOffsetEnv)
	if v == "" {
		return 0, false, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, false, usageError("%s=%q is not a duration (e.g. -3m): %w", testClockOffsetEnv, v, err)
	}
	return d, true, nil
}

// testClockOffset returns the clock testClockOffsetEnv asks for, or nil (the
// process clock) when it is unset. A set offset is logged as a warning at
// every start, so a stray variable cannot shift a production replica quietly.
func testClockOffset(logger *slog.Logger) (cronfence.Clock, error) {
	d, set, err := testOffset()
	if !set || err != nil {
		return nil, err
	}
	logger.Warn("cronfence: TEST ONLY: the scheduler's clock is shifted; unset the variable outside tests",
		"variable", testClockOffsetEnv, "offset", d.String())
	return clock.Offset{By: d}, nil
}

// withMonitor sets the scheduler's replica registry and absence checks from
// the file's monitor: section. Every field is copied, defaults included (they
// are the library's), and config's Off is negative, which the library reads
// as disabled.
func withMonitor(cfg cronfence.Config, m config.Monitor) cronfence.Config {
	cfg.HeartbeatEvery, cfg.CheckEvery = m.HeartbeatEvery, m.CheckEvery
	cfg.Alerts = cronfence.AlertThresholds{
		SkipStreak: m.SkipStreak, FailingSlots: m.FailingSlots, ClockOffset: m.ClockOffset, ReplicaStale: m.ReplicaStale, OrphanWindow: m.OrphanWindow,
	}
	return cfg
}

// withHistory sets the scheduler's pruning from the file's history:
// section. Both fields are copied, defaults included (they are the
// library's), and config's Off is negative, which the library reads as "do
// not prune".
func withHistory(cfg cronfence.Config, h config.History) cronfence.Config {
	cfg.Retention, cfg.PruneEvery = h.Retention, h.PruneEvery
	return cfg
}

// withSchedules sets how often cfg's replica reads the stored schedules.
func withSchedules(cfg cronfence.Config, s config.Schedules) cronfence.Config {
	cfg.SchedulePollEvery = s.PollEvery
	return cfg
}

// schedulerJob maps a config job to the scheduler's, with a handler that
// runs its command.
func schedulerJob(j config.Job, killGrace time.Duration) cronfence.Job {
	return cronfence.Job{
		Name:             j.Name,
		Schedule:         j.Schedule,
		TimeZone:         j.TimeZone,
		Handler:          commandHandler(j, killGrace),
		Timeout:          j.Timeout,
		LeaseTTL:         j.LeaseTTL,
		CatchUpWindow:    j.CatchUpWindow,
		CatchUp:          cronfence.CatchUp(j.CatchUp),
		MaxCatchUp:       j.MaxCatchUp,
		Jitter:           j.Jitter,
		Exclude:          j.Exclude,
		Overlap:          cronfence.Overlap(j.Overlap),
		Deadline:         j.Deadline,
		MaxAttempts:      j.MaxAttempts,
		RetryBackoff:     j.RetryBackoff,
		Disabled:         j.Disabled,
		RunWhenStoreDown: j.RunWhenStoreDown,
		CompletesInTx:    j.CompletesInTx,
	}
}

// runEnv is the environment a command gets about its run: the CRONFENCE_
// variables, the same for serve's jobs and lock --schedule.
func runEnv(run *cronfence.Run) []string {
	slot := ""
	if !run.Slot.IsZero() {
		slot = run.Slot.UTC().Format(time.RFC3339Nano)
	}
	env := []string{
		"CRONFENCE_JOB=" + run.Job,
		"CRONFENCE_SLOT=" + slot,
		"CRONFENCE_GENERATION=" + strconv.FormatInt(run.Generation, 10),
		// The exact lease name for fence() and complete(): "job:NAME",
		// or one per slot (overlap: allow), or for a manual run.
		"CRONFENCE_LEASE=" + run.Lease,
		"CRONFENCE_ATTEMPT=" + strconv.Itoa(run.Attempt),
		"CRONFENCE_IDEMPOTENCY_KEY=" + run.IdempotencyKey(),
		"CRONFENCE_MANUAL=" + strconv.FormatBool(run.Origin == cronfence.OriginManual),
		// Why it runs: scheduled, catch_up, resume, retry, buffered,
		// backfill, manual or fail_open (cronfence.Origin).
		"CRONFENCE_ORIGIN=" + string(run.Origin),
		// A stored schedule's arguments, raw JSON; empty for a declared job.
		"CRONFENCE_ARGS=" + string(run.Args),
	}
	if !run.Slot.IsZero() {
		// The attempt's span in the slot's trace, derived from the job and
		// the slot as package otel derives it: a command that traces
		// records its spans there.
		env = append(env, "TRACEPARENT="+traceid.Parent(run.Job, run.Slot, run.Attempt))
	}
	return env
}

// commandHandler runs the job's command in its own process group with the
// run's facts in CRONFENCE_ variables, logs the tail of its output into the
// run and fails the run when the command does not exit 0.
func commandHandler(j config.Job, killGrace time.Duration) cronfence.Handler {
	base := make([]string, 0, len(j.Env))
	for _, k := range slices.Sorted(maps.Keys(j.Env)) {
		base = append(base, k+"="+j.Env[k])
	}
	return func(ctx context.Context, run *cronfence.Run) error {
		// config rejects CRONFENCE_ keys in env; the run's own come last all the same.
		env := append(append([]string(nil), base...), runEnv(run)...)
		res := command.Run(ctx, command.Spec{
			Argv:      j.Command,
			Shell:     j.Shell,
			Env:       env,
			Dir:       j.Workdir,
			KillGrace: killGrace,
			// Every descendant dies with the run, and with this process.
			Supervisor: command.SelfSupervisor(),
			// Each line reaches the process log (and the run row's logs)
			// as the command writes it, not when it exits: stdout at
			// INFO, stderr at WARN.
			OnLine: func(stream command.Stream, line string) {
				if stream == command.Stderr {
					run.Logger.Warn(line)
					return
				}
				run.Logger.Info(line)
			},
		})
		if res.Err == nil {
			return nil
		}
		// The run's error says how the command ended; what it was goes
		// into the run's own log lines (at DEBUG in serve's log): a
		// script can be pages long, and the error lands in log lines,
		// the API and one-line tables.
		run.Logger.Debug("the command that failed: " + commandText(j))
		var timedOut *cronfence.TimeoutError
		if res.Cancelled && errors.As(context.Cause(ctx), &timedOut) {
			return &killedError{msg: fmt.Sprintf("killed after timeout %s", timedOut.Timeout), cause: res.Err}
		}
		return res.Err
	}
}

// commandText is a job's command as the run's log shows it.
func commandText(j config.Job) string {
	if j.Shell != "" {
		return "sh -c " + strconv.Quote(j.Shell)
	}
	quoted := make([]string, len(j.Command))
	for i, arg := range j.Command {
		quoted[i] = strconv.Quote(arg)
	}
	return strings.Join(quoted, " ")
}

// killedError is a command stopped by its job's timeout: it reads as that,
// and wraps how the command ended (with the timeout as the cause), so the
// scheduler finds the cause in it and does not add it again.
type killedError struct {
	msg   string
	cause error
}

func (e *killedError) Error() string { return e.msg }
func (e *killedError) Unwrap() error { return e.cause }
