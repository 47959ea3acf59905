// Command cronfence is distributed cron's binary: it serves the shell jobs
// of a YAML file on every replica that runs it, wraps any command in a
// cluster-wide lock, applies the store's migrations and shows when a
// schedule fires. Each command lives in its own file; this one parses the
// command line and turns errors into exit statuses.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"unicode/utf8"

	"github.com/alecthomas/kong"

	"github.com/cronfence/cronfence/cmd/cronfence/internal/command"
)

// Exit statuses of cronfence itself; `lock` otherwise exits with its
// command's status.
const (
	exitFailure = 1 // the command could not do its work
	exitUsage   = 2 // bad flags or arguments
)

// cli is the command line.
type cli struct {
	Globals
	Version versionFlag `name:"version" help:"Print the version and exit."`

	Migrate migrateCmd `cmd:"" help:"Apply the database migrations and print the schema version."`
	Next    nextCmd    `cmd:"" help:"Print the next slot instants of a schedule, one a line (no database)."`
	Lock    lockCmd    `cmd:"" help:"Run one command under a renewed cluster-wide lease; skip it while another owner holds the lease (an overlap guard only). With --schedule SPEC, run it once per slot of SPEC across hosts."`
	Serve   serveCmd   `cmd:"" help:"Run the jobs of a YAML config file; every replica on the same database shares the slots."`
	Jobs    jobsCmd    `cmd:"" help:"List the jobs: schedule, zone, enabled and override, next slot, last run, lease (--config FILE, or --server URL)."`
	Pause   pauseCmd   `cmd:"" help:"Pause a job on every replica (override enabled=false)."`
	Resume  resumeCmd  `cmd:"" help:"Resume a job on every replica (override enabled=true)."`
	Unset   unsetCmd   `cmd:"" help:"Remove a job's override: it follows its config's enabled again."`
	Trigger triggerCmd `cmd:"" help:"Run a job now: directly (--config FILE; waits, exit 1 when the run fails) or through --server; exit 3 when a run holds its lease."`
	Logs    logsCmd    `cmd:"" help:"Show a job's runs, newest first."`
	Check   checkCmd   `cmd:"" help:"Print the open alerts; exit 0 healthy, 1 alerting, 2 cannot tell (for cron monitors, Nagios, Kubernetes probes)."`
	Doctor  doctorCmd  `cmd:"" help:"Forecast every job of a config file: next slots, daylight-saving effects, exclusions, warnings; exit 1 on any warning."`
	Alerts  alertsCmd  `cmd:"" help:"List the alerts (open, or --all), or acknowledge one: alerts ack KIND SUBJECT --note WHY."`

	Schedules schedulesCmd `cmd:"" help:"The stored schedules, jobs kept in the database and changed while replicas run: ls, show, add, edit, rm, audit."`
	Backfill  backfillCmd  `cmd:"" help:"Run the slots of a job's range that never ran (--include-failed: the failed ones too), at most --rate a second, driven by the replicas; ls, show, cancel."`
	Ver       versionCmd   `cmd:"" name:"version" help:"Print the version: the module version, and the commit it was built from."`
}

// app is what every command's Run gets: the context cancelled by SIGTERM or
// SIGINT, the output streams and the global flags.
type app struct {
	ctx context.Context
	// force is closed by a second SIGTERM or SIGINT: whatever a graceful
	// shutdown still waits for (running commands) is to be cut short.
	force          <-chan struct{}
	stdout, stderr io.Writer
	globals        *Globals
}

// onForce runs f in a goroutine if a.force is closed before the returned
// stop is called; stop waits for f to return when it has started.
func (a *app) onForce(f func()) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-a.force:
			f()
		case <-done:
		}
	}()
	return func() { close(done); <-finished }
}

// forceContext returns a context cancelled when a.force is closed, after
// logging (say what the second signal cuts short), and its stop function.
func (a *app) forceContext(log func()) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	stop := a.onForce(func() { log(); cancel() })
	return ctx, func() { stop(); cancel() }
}

// exitError ends cronfence with code, printing err first when not nil.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError is an error in the arguments: exit status 2.
func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

func main() {
	// The hidden supervisor of every job command (cmd/cronfence/internal/command): the
	// binary re-executed, before any flag parsing or signal handling.
	if len(os.Args) > 1 && os.Args[1] == command.SuperviseArg {
		os.Exit(command.Supervise(os.Args[2:]))
	}
	ctx, force, stop := shutdownSignals()
	code := run(ctx, force, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// shutdownSignals returns a context cancelled by the first SIGTERM or
// SIGINT (a graceful shutdown) and a channel closed by the second (cut
// it short); stop ends the handling. Later signals are ignored.
func shutdownSignals() (ctx context.Context, force <-chan struct{}, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	forced, done := make(chan struct{}), make(chan struct{})
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-done:
			return
		}
		select {
		case <-sigs:
			close(forced)
		case <-done:
		}
	}()
	return ctx, forced, func() { signal.Stop(sigs); close(done); cancel() }
}

// run runs the command line args and returns the exit status. ctx ends
// with a graceful shutdown; force is closed to cut it short.
func run(ctx context.Context, force <-chan struct{}, args []string, stdout, stderr io.Writer) int {
	var c cli
	exited := -1
	parser, err := kong.New(&c,
		kong.Name("cronfence"),
		kong.Description("Distributed cron: every slot of every job runs once across replicas, coordinated through a SQL database."),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { exited = code }), // --help
	)
	if err != nil {
		fmt.Fprintf(stderr, "cronfence: %v\n", err)
		return exitFailure
	}
	kctx, err := parser.Parse(args)
	if exited >= 0 {
		return exited
	}
	if err != nil {
		if i := invalidUTF8(args, firstSeparator(args)); i >= 0 {
			return refuseArg(stderr, args, i)
		}
		fmt.Fprintf(stderr, "cronfence: %v (see cronfence --help)\n", err)
		return exitUsage
	}
	// kong turns bytes that are not UTF-8 into U+FFFD, so a job name or a
	// flag would silently become another: refuse them. The command of
	// `lock` after its -- is not ours to judge (a crontab line may pass it
	// Latin-1 file names): it takes its arguments from args as they are.
	raw := len(args)
	if kctx.Selected() != nil && kctx.Selected().Name == "lock" {
		raw = lockRawTail(args, c.Lock.Command)
		copy(c.Lock.Command[len(c.Lock.Command)-(len(args)-raw):], args[raw:])
	}
	if i := invalidUTF8(args, raw); i >= 0 {
		return refuseArg(stderr, args, i)
	}
	err = kctx.Run(&app{ctx: ctx, force: force, stdout: stdout, stderr: stderr, globals: &c.Globals})
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "cronfence: %v\n", ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "cronfence: %v\n", err)
	return exitFailure
}

// firstSeparator returns the index of the first "--" of args, len(args)
// when there is none.
func firstSeparator(args []string) int {
	if i := slices.Index(args, "--"); i >= 0 {
		return i
	}
	return len(args)
}

// lockRawTail returns the index of args from which a parsed `lock` passes
// the arguments to its command byte for byte: the ones after the first --
// that kong put into command. kong's passthrough argument takes every
// argument left, one element each, so command is the tail of args (with
// its bytes possibly altered) and the arguments line up from the end.
func lockRawTail(args, command []string) int {
	start := len(args) - len(command)
	if sep := firstSeparator(args); sep+1 > start {
		start = sep + 1
	}
	return min(start, len(args))
}

// invalidUTF8 returns the index of the first of args[:n] that is not valid
// UTF-8, or -1.
func invalidUTF8(args []string, n int) int {
	for i, arg := range args[:n] {
		if !utf8.ValidString(arg) {
			return i
		}
	}
	return -1
}

// refuseArg says that args[i] is not UTF-8 and returns the usage status.
func refuseArg(stderr io.Writer, args []string, i int) int {
	fmt.Fprintf(stderr, "cronfence: argument %d (%q) is not valid UTF-8; job and lease names, flags and their values must be UTF-8 (only the command after lock's -- may be any bytes)\n", i+1, args[i])
	return exitUsage
}
