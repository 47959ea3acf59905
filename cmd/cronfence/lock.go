package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"strconv"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/internal/command"
	"github.com/cronfence/cronfence/store"
)

// Exit statuses of `lock` when the command never started, as a shell has them.
const (
	exitNotFound      = 127
	exitCannotExecute = 126
)

// minTTL is the shortest --ttl: below it a renewal every TTL/3 leaves
// too little room for a database round trip.
const minTTL = time.Second

// lockCmd is `cronfence lock`.
type lockCmd struct {
	Name         string        `arg:"" help:"Lease name, the same on every host that runs this command."`
	TTL          time.Duration `name:"ttl" default:"90s" help:"Lease time to live; renewed every TTL/3 while the command runs, taken over by another host within TTL if this one dies."`
	BusyExitCode int           `name:"busy-exit-code" default:"0" help:"Exit status when another owner holds the lease and the command is not run."`
	KillGrace    time.Duration `name:"kill-grace" default:"10s" help:"Time between SIGTERM and SIGKILL when the command is cancelled (lease lost, SIGTERM or SIGINT to lock); a second SIGTERM or SIGINT cuts it short."`
	Command      []string      `arg:"" passthrough:"partial" name:"command" help:"The command and its arguments, after --."`
}

func (c *lockCmd) Run(a *app) error {
	if err := store.ValidateName("lease name", c.Name); err != nil {
		return usageError("lock: %w", err)
	}
	if c.TTL < minTTL {
		return usageError("lock %q: --ttl must be at least %s (renewed every TTL/3), got %s", c.Name, minTTL, c.TTL)
	}
	if err := store.ValidateTTL(c.TTL); err != nil {
		return usageError("lock %q: --ttl: %w", c.Name, err)
	}
	if c.BusyExitCode < 0 || c.BusyExitCode > 255 {
		return usageError("--busy-exit-code must be between 0 and 255, got %d", c.BusyExitCode)
	}
	if c.KillGrace <= 0 {
		return usageError("--kill-grace must be positive, got %s", c.KillGrace)
	}
	// kong keeps the separator of a passthrough argument: the command
	// starts with it when, and only when, it came after a --.
	if len(c.Command) == 0 || c.Command[0] != "--" {
		return usageError("lock %q: put the command after --: cronfence lock NAME [flags] -- COMMAND [ARGS...]; got %q before any --", c.Name, c.Command)
	}
	c.Command = c.Command[1:]
	if len(c.Command) == 0 || c.Command[0] == "" {
		return usageError("lock %q: no command to run; put it after --", c.Name)
	}
	db, err := a.globals.open(a.ctx, true)
	if err != nil {
		return err
	}
	defer db.close()

	var res command.Result
	ran, err := cronfence.Lock(a.ctx, db, c.Name, c.TTL, func(ctx context.Context, lease *cronfence.Lease) error {
		// A second signal skips what is left of the kill grace.
		stop := a.onForce(func() {
			fmt.Fprintf(a.stderr, "cronfence: lock %q: second signal; killing %q now\n", c.Name, c.Command[0])
		})
		defer stop()
		res = command.Run(ctx, command.Spec{
			Argv: c.Command,
			Env: []string{
				"CRONFENCE_LEASE=" + lease.Name,
				"CRONFENCE_GENERATION=" + strconv.FormatInt(lease.Generation, 10),
			},
			KillGrace:  c.KillGrace,
			Inherit:    true,
			Supervisor: command.SelfSupervisor(),
			KillNow:    a.force,
		})
		return nil
	})
	switch {
	case !ran && err != nil:
		return wrapInvalid(err)
	case !ran && a.ctx.Err() != nil:
		return &exitError{code: exitFailure, err: fmt.Errorf("lock %q: interrupted before the command started", c.Name)}
	case !ran:
		fmt.Fprintf(a.stderr, "cronfence: lock %q is held by another owner; %q not run\n", c.Name, c.Command[0])
		return &exitError{code: c.BusyExitCode}
	}

	if res.ExitCode == -1 { // never started
		code := exitCannotExecute
		switch {
		case errors.Is(res.Err, exec.ErrNotFound) || errors.Is(res.Err, fs.ErrNotExist):
			code = exitNotFound
		case a.ctx.Err() != nil || errors.Is(err, cronfence.ErrLeaseLost):
			code = exitFailure // cancelled between the acquisition and the start
		}
		return &exitError{code: code, err: errors.Join(res.Err, err)}
	}
	if errors.Is(err, cronfence.ErrLeaseLost) {
		code := res.ExitCode
		if code == 0 {
			code = exitFailure // cut short or not, it finished without the lease
		}
		return &exitError{code: code, err: fmt.Errorf("lock %q: lease lost while %q ran; it was cancelled: %w", c.Name, c.Command[0], err)}
	}
	if err != nil {
		// The command finished under the lease; only the release failed.
		fmt.Fprintf(a.stderr, "cronfence: %v\n", err)
	}
	if a.ctx.Err() != nil {
		fmt.Fprintf(a.stderr, "cronfence: lock %q: interrupted; %q was cancelled\n", c.Name, c.Command[0])
	}
	if res.ExitCode != 0 {
		return &exitError{code: res.ExitCode}
	}
	return nil
}
