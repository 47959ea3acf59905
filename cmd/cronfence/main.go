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
	"syscall"

	"github.com/alecthomas/kong"
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

	Migrate migrateCmd `cmd:"" help:"Apply the database migrations and print the schema version."`
	Next    nextCmd    `cmd:"" help:"Print the next slot instants of a schedule, one a line (no database)."`
	Lock    lockCmd    `cmd:"" help:"Run one command under a renewed cluster-wide lease; skip it while another owner holds the lease."`
	Serve   serveCmd   `cmd:"" help:"Run the jobs of a YAML config file; every replica on the same database shares the slots."`
	Jobs    jobsCmd    `cmd:"" help:"List the jobs: schedule, zone, enabled and override, next slot, last run, lease (--config FILE, or --server URL)."`
	Pause   pauseCmd   `cmd:"" help:"Pause a job on every replica (override enabled=false)."`
	Resume  resumeCmd  `cmd:"" help:"Resume a job on every replica (override enabled=true)."`
	Unset   unsetCmd   `cmd:"" help:"Remove a job's override: it follows its config's enabled again."`
	Trigger triggerCmd `cmd:"" help:"Start a manual run of a job now (needs --server); exit 3 when a run holds its lease."`
	Logs    logsCmd    `cmd:"" help:"Show a job's runs, newest first."`
}

// app is what every command's Run gets: the context cancelled by SIGTERM or
// SIGINT, the output streams and the global flags.
type app struct {
	ctx            context.Context
	stdout, stderr io.Writer
	globals        *Globals
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
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the command line args and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
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
		fmt.Fprintf(stderr, "cronfence: %v (see cronfence --help)\n", err)
		return exitUsage
	}
	err = kctx.Run(&app{ctx: ctx, stdout: stdout, stderr: stderr, globals: &c.Globals})
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
