package main

// The kinds of stored schedules a serve replica runs: the config's
// kinds:, each a command run as a job's is, and with schedules:
// {allow_shell: true} the built-in kind shell, whose schedules carry
// their command in their arguments.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/cmd/cronfence/internal/config"
)

// registerKinds registers the kinds of f on s.
func registerKinds(s *cronfence.Scheduler, f *config.File, killGrace time.Duration) error {
	for _, k := range f.Kinds {
		// A kind's command is a job's command named for the kind; the
		// run's CRONFENCE_JOB is the schedule's name all the same.
		h := commandHandler(config.Job{Name: k.Name, Command: k.Command, Shell: k.Shell, Env: k.Env, Workdir: k.Workdir}, killGrace)
		if err := s.RegisterKind(k.Name, h); err != nil {
			return usageError("%s:%d: kinds.%s: %w", f.Path, k.Line, k.Name, err)
		}
	}
	if f.Schedules.AllowShell {
		if err := s.RegisterKind(config.ShellKind, shellKindHandler(killGrace)); err != nil {
			return usageError("%s: schedules.allow_shell: %w", f.Path, err)
		}
	}
	return nil
}

// shellArgs are the arguments of a schedule of kind shell.
type shellArgs struct {
	Command string `json:"command"`
}

// parseShellArgs reads the arguments of a schedule of kind shell.
func parseShellArgs(args json.RawMessage) (string, error) {
	var a shellArgs
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return "", fmt.Errorf(`args of kind shell must be {"command": "…"}: %w`, err)
	}
	if strings.TrimSpace(a.Command) == "" {
		return "", errors.New(`args of kind shell must be {"command": "…"} with a command that is not empty`)
	}
	return a.Command, nil
}

// shellKindHandler runs the command in a shell schedule's arguments with
// /bin/sh -c, as a job's shell: is run.
func shellKindHandler(killGrace time.Duration) cronfence.Handler {
	return func(ctx context.Context, run *cronfence.Run) error {
		cmd, err := parseShellArgs(run.Args)
		if err != nil {
			return err
		}
		return commandHandler(config.Job{Name: config.ShellKind, Shell: cmd, Env: map[string]string{}}, killGrace)(ctx, run)
	}
}
