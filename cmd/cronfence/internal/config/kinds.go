package config

import (
	"slices"
	"strings"
	"time"

	"github.com/cronfence/cronfence/store"
	"go.yaml.in/yaml/v3"
)

// ShellKind is the built-in kind schedules: {allow_shell: true} turns
// on: a stored schedule of this kind carries its command in its
// arguments ({"command": "…"}), run with /bin/sh -c. No kinds: entry may
// take its name.
const ShellKind = "shell"

// kindKeys are the fields of a kinds: entry written as a mapping: a job's
// command keys.
var kindKeys = commandKeys

// schedulesKeys are the fields of schedules:.
var schedulesKeys = []string{"allow_shell", "poll_every"}

// MinSchedulePollEvery is the shortest schedules.poll_every: each read is
// a statement of every replica's, idle or not.
const MinSchedulePollEvery = 100 * time.Millisecond

// Kind is one entry of kinds:: the command that runs a stored schedule
// of that kind, as a job's command runs, with the schedule's arguments in
// CRONFENCE_ARGS (raw JSON) and its name in CRONFENCE_JOB. The arguments
// never become part of the command line.
type Kind struct {
	// Name is the kind, as stored schedules name it.
	Name string
	// Command is the argv to run, or nil when Shell is set.
	Command []string
	// Shell is a script for /bin/sh -c, or "" when Command is set.
	Shell string
	// Env holds extra environment variables for the command, never nil.
	Env map[string]string
	// Workdir is the command's directory, absolute, or "" to inherit the
	// process's.
	Workdir string
	// Line is the kind's line in the file.
	Line int
}

// Schedules is the schedules: section: what stored schedules created
// through the API may do.
type Schedules struct {
	// AllowShell registers the kind ShellKind, whose schedules run a
	// command given in their arguments: whoever holds an admin token can
	// then run any command on every replica. Off unless set.
	AllowShell bool
	// PollEvery is how often a replica reads the stored schedules' changes
	// when no notice tells it of them (SQLite, MySQL; PostgreSQL's
	// notices make it a backstop). Zero: cronfence.DefaultSchedulePollEvery.
	PollEvery time.Duration
}

// kinds decodes kinds:, a mapping of kind name to its command: a string
// (a script for /bin/sh -c) or a mapping of command or shell, env and
// workdir.
func (d *decoder) kinds(n *yaml.Node) []Kind {
	if n == nil {
		return nil
	}
	if n = d.deref(n, "kinds"); n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(n.Line, "kinds", "must be a mapping of kind name to its command, got %s", kind(n))
		return nil
	}
	var out []Kind
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		path := "kinds." + k.Value
		if k.Kind != yaml.ScalarNode {
			d.errorf(k.Line, "kinds", "keys must be kind names, got %s", kind(k))
			continue
		}
		name := k.Value
		if err := store.ValidateName("kind", name); err != nil {
			d.errorf(k.Line, path, "%s", storeMessage(err))
			continue
		}
		if name == ShellKind {
			d.errorf(k.Line, path, "%q is the built-in kind of schedules.allow_shell; choose another name", ShellKind)
			continue
		}
		if slices.ContainsFunc(out, func(o Kind) bool { return o.Name == name }) {
			d.errorf(k.Line, path, "repeated")
			continue
		}
		if v = d.deref(v, path); v == nil {
			continue
		}
		kd := Kind{Name: name, Env: map[string]string{}, Line: k.Line}
		if v.Kind == yaml.ScalarNode {
			if s, ok := d.str(v, path); ok {
				if strings.TrimSpace(s) == "" {
					d.errorf(v.Line, path, "must not be empty: a script for /bin/sh -c, or a mapping with command or shell")
				}
				kd.Shell = s
			}
			out = append(out, kd)
			continue
		}
		var commandSeen, shellSeen bool
		if !d.mapping(v, path, kindKeys, func(key string, _, fv *yaml.Node) {
			kp := join(path, key)
			switch key {
			case "command":
				commandSeen = true
				kd.Command, _ = d.argv(fv, kp)
			case "shell":
				shellSeen = true
				if s, ok := d.str(fv, kp); ok {
					if strings.TrimSpace(s) == "" {
						d.errorf(fv.Line, kp, "must not be empty")
					}
					kd.Shell = s
				}
			case "env":
				if m, ok := d.env(fv, kp); ok {
					kd.Env = m
				}
			case "workdir":
				if s, ok := d.str(fv, kp); ok {
					if s == "" {
						d.errorf(fv.Line, kp, "must not be empty; leave it out to inherit the process's directory")
					} else {
						kd.Workdir = d.path(s)
					}
				}
			}
		}) {
			continue
		}
		switch {
		case commandSeen && shellSeen:
			d.errorf(v.Line, path, "set command or shell, not both")
		case !commandSeen && !shellSeen:
			d.errorf(v.Line, path, "command (an argv list) or shell (a script for /bin/sh -c) is required")
		}
		out = append(out, kd)
	}
	return out
}

// schedules decodes schedules:.
func (d *decoder) schedules(n *yaml.Node) Schedules {
	var s Schedules
	d.mapping(n, "schedules", schedulesKeys, func(key string, _, v *yaml.Node) {
		switch key {
		case "allow_shell":
			s.AllowShell, _ = d.boolean(v, "schedules.allow_shell")
		case "poll_every":
			if x, ok := d.duration(v, "schedules.poll_every"); ok {
				if x < MinSchedulePollEvery {
					d.errorf(v.Line, "schedules.poll_every", "%q must be at least %s", x, MinSchedulePollEvery)
				} else {
					s.PollEvery = x
				}
			}
		}
	})
	return s
}
