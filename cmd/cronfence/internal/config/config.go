// Package config loads and validates the YAML file that `cronfence serve`
// runs: the database, the API tokens, the shell-command jobs, the alert
// webhook, the absence monitoring and the history's retention. Every key is
// described in docs/config.md (TestReferenceListsEveryKey holds it to the
// decoder).
//
// Everything is checked at load, and every problem is reported at once
// (joined with errors.Join), each as an *Error naming the file, the line and
// the field:
//
//	cronfence.yaml:12: jobs[1].timeout: "-5s" must not be negative
//
// Job indexes count from 0. Unknown fields are rejected at every level.
//
// # Environment variables
//
// ${VAR} in any string value is replaced by the variable's value; a variable
// that is not set is an error naming it, unless written ${VAR:-default}
// (the default is used when VAR is unset or empty), for a command that
// reads the value (Reads): the admin commands do not read the API tokens
// or the webhook, and need not have serve's secrets. $VAR without braces is
// left alone, so `shell: echo $CRONFENCE_SLOT` reaches the shell as
// written; write $${VAR} for a literal ${VAR}.
//
// # Monitoring
//
// The monitor: section tunes the replica registry and the absence checks
// (docs/alerts.md): heartbeat_every and check_every are periods (at least
// 1s) or off; skip_streak, clock_offset, replica_stale and orphan_window
// are alert thresholds. Left out, each takes the cronfence package's
// default (see Monitor).
//
// # History
//
// The history: section sets how long the database keeps slots, runs,
// resolved alerts and stale replica rows (retention: a duration, or off to
// keep everything) and how often one replica prunes them (prune_every).
// The retention must be longer than every job's timeout and deadline and
// than monitor.replica_stale, or pruning would delete rows a run or a check
// still reads. Left out, each takes the cronfence package's default (see
// History).
//
// # Stored schedules
//
// kinds: maps a kind of stored schedules (created through the API, the
// CLI or the dashboard) to the command that runs it: a script for
// /bin/sh -c, or a mapping of command or shell, env and workdir, run as a
// job's command is, with the schedule's arguments in CRONFENCE_ARGS.
// schedules: {allow_shell: true} adds the built-in kind "shell", whose
// schedules carry their command in their arguments; it is off unless set.
//
// # Defaults
//
// The defaults: section takes every job field except name, command and
// shell; a job's own value wins. env maps are merged, the job's keys
// winning.
//
// This package imports neither the scheduler nor a store implementation:
// Job's fields have the names and meanings of cronfence.Job's, and the
// binary copies them across.
package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Defaults applied to a job when neither it nor the defaults: section sets
// the field. They equal the cronfence package's defaults.
const (
	// DefaultTimeZone is a job's zone when none is given.
	DefaultTimeZone = "UTC"
	// DefaultLeaseTTL equals cronfence.DefaultLeaseTTL.
	DefaultLeaseTTL = 90 * time.Second
	// DefaultMaxAttempts equals cronfence.DefaultMaxAttempts.
	DefaultMaxAttempts = 3
	// DefaultRetryBackoff equals cronfence.DefaultRetryBackoff.
	DefaultRetryBackoff = 10 * time.Second
	// DefaultOverlap equals cronfence.OverlapSkip.
	DefaultOverlap = "skip"
	// DefaultSQLiteFile is the SQLite file name, beside the config file,
	// when sqlite: is not given.
	DefaultSQLiteFile = "cronfence.db"
	// MaxJobNameLength equals cronfence.MaxJobNameLength.
	MaxJobNameLength = 150
)

// Token roles.
const (
	// RoleAdmin may read and change (pause, resume, trigger).
	RoleAdmin = "admin"
	// RoleRead may only read.
	RoleRead = "read"
)

// File is a loaded, validated config file.
type File struct {
	// Path is the file as named to Load or Parse.
	Path string
	// Dir is the absolute directory relative paths were resolved against.
	Dir string
	// Database is the PostgreSQL or MySQL URL (or PostgreSQL key=value
	// string), empty when not given (the binary then uses SQLitePath).
	Database string
	// SQLitePath is the absolute path of the SQLite file: sqlite: resolved
	// against Dir, or Dir/cronfence.db.
	SQLitePath string
	// Tokens are the API bearer tokens.
	Tokens []Token
	// Jobs are the jobs, in file order.
	Jobs []Job
	// Exclude is the exclusion windows of every job (top-level exclude:),
	// read in each job's zone, besides each job's own.
	Exclude []string
	// Kinds are the commands of stored schedules' kinds, in file order.
	Kinds []Kind
	// Schedules is what stored schedules may do (schedules:).
	Schedules Schedules
	// Webhook is where alerts are POSTed; nil when webhook: is not given.
	Webhook *Webhook
	// Monitor tunes the replica registry and the absence checks; the
	// defaults when monitor: is not given.
	Monitor Monitor
	// History is how long history is kept and how often it is pruned; the
	// defaults when history: is not given.
	History History
}

// Token is an API bearer token.
type Token struct {
	// Name identifies the token's holder, e.g. in the override's "who".
	Name string
	// Role is RoleAdmin or RoleRead.
	Role string
	// Token is the secret.
	Token string
	// Line is the token's line in the file.
	Line int
}

// Job is one job with defaults applied. The fields from Name to
// CompletesInTx have the names and meanings of cronfence.Job's.
type Job struct {
	Name          string
	Schedule      string
	TimeZone      string // never empty: DefaultTimeZone when not given
	Timeout       time.Duration
	LeaseTTL      time.Duration // DefaultLeaseTTL when not given
	CatchUpWindow time.Duration // zero unless CatchUp is latest or all
	CatchUp       string        // "none", "latest" or "all"; latest when a window is given, none otherwise
	MaxCatchUp    int           // with CatchUp all; zero: the library's default
	Overlap       string        // "skip", "allow" or "buffer-one"; DefaultOverlap when not given
	Jitter        time.Duration // the bound of each slot's start delay; zero for none
	// Exclude is the job's exclusion windows (exclude:, its own or
	// defaults:'), read in TimeZone; File.Exclude applies besides.
	Exclude      []string
	Deadline     time.Duration
	MaxAttempts  int           // DefaultMaxAttempts when not given
	RetryBackoff time.Duration // DefaultRetryBackoff when not given
	Disabled     bool          // enabled: false
	// RunWhenStoreDown runs the command without a lease when the store
	// cannot be reached.
	RunWhenStoreDown bool
	// CompletesInTx: the command completes its slot in its own
	// transaction (complete() / cronfence_complete), and only that
	// completion counts (completes_in_tx: true).
	CompletesInTx bool

	// Command is the argv to run, or nil when Shell is set.
	Command []string
	// Shell is a script for /bin/sh -c, or "" when Command is set.
	Shell string
	// Env holds extra environment variables for the command (merged from
	// defaults:), never nil.
	Env map[string]string
	// Workdir is the command's directory, absolute (resolved against the
	// config's directory), or "" to inherit the process's.
	Workdir string
	// Line is the job's line in the file.
	Line int
}

// Reads says which of a file's values a command reads. A ${VAR} that is
// not set is an error in a value the command reads, naming the variable,
// and none in a value it does not: that value is left empty (a token
// without its secret, a job without its env), for the command not to use.
// Every command reads sqlite: and the jobs' names.
type Reads struct {
	// Database: database:. Not read when --database overrides it.
	Database bool
	// Tokens, Webhook, Monitor and History: those sections.
	Tokens, Webhook, Monitor, History bool
	// Schedules: every job's schedule and settings, the fields other than
	// command, shell, env and workdir, and those of defaults:.
	Schedules bool
	// Commands: every job's command, shell, env and workdir, those of
	// defaults:, and the kinds' commands.
	Commands bool
	// Run names a job whose every value is read, with defaults:, for a
	// command that runs it; "" for none.
	Run string
}

// Everything reads every value, as serve does (but for database: when
// --database overrides it).
var Everything = Reads{Database: true, Tokens: true, Webhook: true, Monitor: true, History: true, Schedules: true, Commands: true}

// commandKeys are the job fields Reads.Commands covers.
var commandKeys = []string{"command", "shell", "env", "workdir"}

// reads reports whether r reads the value at path (as in messages:
// "tokens[0].token", "jobs[2].env.KEY"), of the job named job when the
// value is one of a job's.
func (r Reads) reads(path, job string) bool {
	section, rest := path, ""
	if i := strings.IndexAny(path, ".["); i >= 0 {
		section, rest = path[:i], path[i:]
	}
	switch section {
	case "database":
		return r.Database
	case "tokens":
		return r.Tokens
	case "webhook":
		return r.Webhook
	case "monitor":
		return r.Monitor
	case "history":
		return r.History
	case "kinds":
		return r.Commands
	case "jobs", "defaults":
		if section == "jobs" { // skip the index: "[2].env.KEY" → ".env.KEY"
			_, rest, _ = strings.Cut(rest, "]")
		}
		field := strings.TrimPrefix(rest, ".")
		if i := strings.IndexAny(field, ".["); i >= 0 {
			field = field[:i]
		}
		run := r.Run != "" && (section == "defaults" || job == r.Run)
		switch {
		case field == "name":
			return true
		case slices.Contains(commandKeys, field):
			return r.Commands || run
		default:
			return r.Schedules || run
		}
	}
	return true
}

// Load reads and validates the config file at path, as serve reads it:
// every variable must be set.
func Load(path string) (*File, error) {
	return LoadFor(path, Everything)
}

// LoadFor reads and validates the config file at path for a command that
// reads what r says: a variable that is not set is an error only in a
// value it reads.
func LoadFor(path string, r Reads) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return parse(data, path, os.LookupEnv, r)
}

// Parse validates a config file's contents, every variable required. name
// is the file's path: it appears in messages and relative paths are
// resolved against its directory. Variables are expanded from the process
// environment.
func Parse(data []byte, name string) (*File, error) {
	return parse(data, name, os.LookupEnv, Everything)
}

func parse(data []byte, name string, lookup func(string) (string, bool), r Reads) (*File, error) {
	dir, err := filepath.Abs(filepath.Dir(name))
	if err != nil {
		return nil, fmt.Errorf("config: %s: %w", name, err)
	}
	d := &decoder{name: name, dir: dir, lookup: lookup, reads: r, job: -1}
	f := d.file(data)
	if err := d.err(); err != nil {
		return nil, err
	}
	return f, nil
}
