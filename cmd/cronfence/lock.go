package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os/exec"
	"strconv"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/cmd/cronfence/internal/command"
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
	Name         string         `arg:"" help:"Lease name, the same on every host that runs this command; with --schedule, the job's name (its lease is job:NAME)."`
	Schedule     *string        `name:"schedule" placeholder:"SPEC" help:"Run the command once per slot of this cron spec across hosts, not once per host: a host that finds the slot completed, skipped, running elsewhere or out of attempts does not run it. Without --schedule, lock only guards overlap."`
	TZ           string         `name:"tz" placeholder:"ZONE" help:"With --schedule: the IANA time zone SPEC is read in (a CRON_TZ= prefix in SPEC wins). Defaults to UTC."`
	MaxAttempts  *int           `name:"max-attempts" placeholder:"N" help:"With --schedule: how many hosts may attempt one slot; a failed command leaves the slot to the next host while attempts remain. Defaults to 1."`
	EarlyGrace   *time.Duration `name:"early-grace" placeholder:"D" help:"With --schedule: how far this host's clock may run ahead of the database's; a slot starting within D by the database clock is waited for and run, rather than the previous one. 0 turns it off. Defaults to 2s."`
	TTL          time.Duration  `name:"ttl" default:"90s" help:"Lease time to live; renewed every TTL/3 while the command runs, taken over by another host within TTL if this one dies."`
	BusyExitCode int            `name:"busy-exit-code" default:"0" help:"Exit status when the command is not run: another owner holds the lease or, with --schedule, the slot is not this host's to run."`
	KillGrace    time.Duration  `name:"kill-grace" default:"10s" help:"Time between SIGTERM and SIGKILL when the command is cancelled (lease lost, SIGTERM or SIGINT to lock); a second SIGTERM or SIGINT cuts it short."`
	Quiet        bool           `name:"quiet" short:"q" help:"Print nothing when the command is not run because another host has it: with --schedule, the slot was completed, skipped or used its attempts elsewhere, or runs elsewhere; without, another owner holds the lease. For cron, which mails what a line prints: only the host where something happened says so. Errors, failures and the command's own output still go through; the exit status is unchanged."`
	Command      []string       `arg:"" passthrough:"partial" name:"command" help:"The command and its arguments, after --."`
}

func (c *lockCmd) Help() string {
	return "Flags come before --, the command after it; everything after the first -- reaches the command untouched. " +
		"Without --schedule, lock guards overlap only: the command does not run while another host holds the lease NAME, " +
		"but the same line run again once the first run finished (a fast job, a host whose cron fires a little later) runs again. " +
		"With --schedule SPEC, the command runs once per slot of SPEC across every host running the line: the slot is SPEC's " +
		"most recent instant by the database clock, claimed as job NAME in the slot registry `serve` uses (so pause NAME, logs NAME " +
		"and a served job of that name share it); a host that finds the slot completed, skipped, running elsewhere or out of " +
		"attempts exits 0 (or --busy-exit-code) and says which slot and who has it (with --quiet, under cron, it says nothing when another host has it). A command that fails (exit status not 0) ends " +
		"the slot failed, left to a later host while --max-attempts allows, and lock exits with its status. The command gets " +
		"CRONFENCE_JOB, CRONFENCE_SLOT (RFC 3339, UTC), CRONFENCE_LEASE, CRONFENCE_GENERATION, CRONFENCE_ATTEMPT, " +
		"CRONFENCE_IDEMPOTENCY_KEY, CRONFENCE_MANUAL, CRONFENCE_ORIGIN (scheduled) and TRACEPARENT, so it can complete its slot in its own transaction: " +
		"SELECT cronfence.complete('$CRONFENCE_LEASE', $CRONFENCE_GENERATION) on PostgreSQL, " +
		"INSERT INTO cronfence_complete VALUES ('$CRONFENCE_LEASE', $CRONFENCE_GENERATION) inside BEGIN IMMEDIATE on SQLite. " +
		"Without --schedule it gets CRONFENCE_LEASE (NAME) and CRONFENCE_GENERATION."
}

func (c *lockCmd) Run(a *app) error {
	if err := c.validate(); err != nil {
		return err
	}
	db, err := a.globals.openMigrated(a.ctx)
	if err != nil {
		return err
	}
	defer db.close()
	if c.Schedule != nil {
		return c.runSlot(a, db)
	}

	var res command.Result
	// With a liveness session on PostgreSQL: a lock killed with kill -9
	// frees its name at once, not after --ttl. (db.Store, not db: the
	// wrapper would hide the store's liveness from its type.)
	ran, err := cronfence.LockWith(a.ctx, db.Store, c.Name, c.TTL, cronfence.LockOptions{Liveness: true}, func(ctx context.Context, lease *cronfence.Lease) error {
		res = c.runCommand(ctx, a, []string{
			"CRONFENCE_LEASE=" + lease.Name,
			"CRONFENCE_GENERATION=" + strconv.FormatInt(lease.Generation, 10),
		})
		return nil
	})
	switch {
	case !ran && err != nil:
		return wrapInvalid(err)
	case !ran && a.ctx.Err() != nil:
		return &exitError{code: exitFailure, err: fmt.Errorf("lock %q: interrupted before the command started", c.Name)}
	case !ran:
		if !c.Quiet {
			fmt.Fprintf(a.stderr, "cronfence: lock %q is held by %s; %q not run\n", c.Name, holderText(a.ctx, db, c.Name), c.Command[0])
		}
		return &exitError{code: c.BusyExitCode}
	}
	if exit := c.ended(a, res, err, err); exit != nil {
		return exit
	}
	if err != nil {
		// The command finished under the lease; only the release failed.
		fmt.Fprintf(a.stderr, "cronfence: %v\n", err)
	}
	return c.exit(a, res)
}

// validate checks the flags and the command, and leaves c.Command without
// kong's separator.
func (c *lockCmd) validate() error {
	if c.Schedule != nil {
		// The name is a job's: the lease job:NAME must fit.
		if len(c.Name) > cronfence.MaxJobNameLength {
			return usageError("lock: with --schedule, NAME is a job name: it must be at most %d bytes, got %d", cronfence.MaxJobNameLength, len(c.Name))
		}
		if err := store.ValidateName("job name", c.Name); err != nil {
			return usageError("lock: %w", err)
		}
	} else if err := store.ValidateName("lease name", c.Name); err != nil {
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
	if err := c.validateSchedule(); err != nil {
		return err
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
	return nil
}

// validateSchedule checks --schedule and the flags that apply with it only.
func (c *lockCmd) validateSchedule() error {
	if c.Schedule == nil {
		for _, f := range []struct {
			flag string
			set  bool
		}{{"--tz", c.TZ != ""}, {"--max-attempts", c.MaxAttempts != nil}, {"--early-grace", c.EarlyGrace != nil}} {
			if f.set {
				return usageError("lock %q: %s applies with --schedule only", c.Name, f.flag)
			}
		}
		return nil
	}
	// The spec, its zone and the rest are the library's to judge, before
	// the database is opened: the words of its error, under the flags.
	if err := c.slotLock().Validate(); err != nil {
		flags := fmt.Sprintf("--schedule %q", *c.Schedule)
		if c.TZ != "" {
			flags += fmt.Sprintf(" --tz %q", c.TZ)
		}
		return usageError("lock %q: %s: %w", c.Name, flags, err)
	}
	if c.MaxAttempts != nil && *c.MaxAttempts < 1 {
		return usageError("lock %q: --max-attempts must be at least 1, got %d", c.Name, *c.MaxAttempts)
	}
	if c.EarlyGrace != nil && *c.EarlyGrace < 0 {
		return usageError("lock %q: --early-grace must not be negative (0 turns it off), got %s", c.Name, *c.EarlyGrace)
	}
	return nil
}

// slotLock is --schedule and its flags as the library takes them.
func (c *lockCmd) slotLock() cronfence.SlotLock {
	l := cronfence.SlotLock{Name: c.Name, Schedule: *c.Schedule, TimeZone: c.TZ, TTL: c.TTL}
	if c.MaxAttempts != nil {
		l.MaxAttempts = *c.MaxAttempts
	}
	if c.EarlyGrace != nil {
		l.EarlyGrace = *c.EarlyGrace
		if l.EarlyGrace == 0 {
			l.EarlyGrace = -1 // off
		}
	}
	return l
}

// runSlot runs the command once per slot of --schedule across hosts.
func (c *lockCmd) runSlot(a *app, db *database) error {
	l := c.slotLock()
	// Warnings (a run's end recorded only after retries, a lost lease) go
	// to stderr beside the command's own output.
	l.Logger = slog.New(slog.NewTextHandler(a.stderr, nil))
	offset, shifted, err := testOffset()
	if err != nil {
		return err
	}
	if shifted {
		now, err := db.Now(a.ctx)
		if err != nil {
			return err
		}
		l.At = now.Add(offset)
		fmt.Fprintf(a.stderr, "cronfence: TEST ONLY: %s=%s shifts the instant lock picks its slot from to %s; unset it outside tests\n",
			testClockOffsetEnv, offset, l.At.UTC().Format(time.RFC3339))
	}

	var res command.Result
	// db.Store, not db: the store itself, whose liveness (PostgreSQL)
	// LockSlot finds by its type; the wrapper would hide it.
	slot, err := cronfence.LockSlot(a.ctx, db.Store, l, func(ctx context.Context, run *cronfence.Run) error {
		res = c.runCommand(ctx, a, runEnv(run))
		if res.Err != nil {
			return fmt.Errorf("command %q: %w", c.Command[0], res.Err)
		}
		return nil
	})
	at := slot.Slot.Format(time.RFC3339)
	switch {
	case !slot.Ran && err != nil && a.ctx.Err() != nil:
		return &exitError{code: exitFailure, err: fmt.Errorf("lock %q: interrupted before the command started", c.Name)}
	case !slot.Ran && err != nil:
		return wrapInvalid(err)
	case !slot.Ran:
		if !c.Quiet || !elsewhere(slot) {
			fmt.Fprintf(a.stderr, "cronfence: lock %q: slot %s %s; %q not run\n", c.Name, at, whyNotRun(c.Name, slot), c.Command[0])
		}
		return &exitError{code: c.BusyExitCode}
	}
	// err repeats the command's failure, which res has: only a lost lease
	// or an end not recorded is news.
	news := leaseLost(err)
	if slot.Status == "" {
		news = err
	}
	if exit := c.ended(a, res, err, news); exit != nil {
		return exit
	}
	attempts := max(l.MaxAttempts, 1)
	switch {
	case slot.Status == "":
		// The command ran; its end could not be recorded (the store did not
		// answer before lock was interrupted), so the slot stays running
		// until its lease expires.
		code := res.ExitCode
		if code == 0 {
			code = exitFailure
		}
		return &exitError{code: code, err: fmt.Errorf("lock %q: slot %s: %w", c.Name, at, err)}
	case res.ExitCode != 0 && slot.Status == store.SlotCompleted:
		fmt.Fprintf(a.stderr, "cronfence: lock %q: slot %s: %q exited %d after completing its slot in its own transaction; the slot stays completed\n",
			c.Name, at, c.Command[0], res.ExitCode)
	case res.ExitCode != 0 && slot.Attempt < attempts:
		fmt.Fprintf(a.stderr, "cronfence: lock %q: slot %s: attempt %d of %d failed; a later host may run it again\n", c.Name, at, slot.Attempt, attempts)
	case res.ExitCode != 0:
		fmt.Fprintf(a.stderr, "cronfence: lock %q: slot %s: attempt %d of %d failed; no attempts left\n", c.Name, at, slot.Attempt, attempts)
	}
	return c.exit(a, res)
}

// elsewhere reports whether a slot not run here is another host's: it
// completed it, runs it, used its attempts on it or recorded it skipped.
// That host said so (its command's output, its failure, the overlap it
// recorded); --quiet leaves it to that one. The other refusals are this
// host's to tell: the job paused, an overlap recorded by this claim, a
// lease still busy, a slot not due.
func elsewhere(r cronfence.SlotLockResult) bool {
	switch r.Refusal {
	case store.ClaimCompleted, store.ClaimSkipped, store.ClaimAttemptsExhausted:
		return true
	case store.ClaimHeld:
		return r.Claim.Recorded == "" // running; not a skip or a buffer recorded by this claim
	}
	return false
}

// whyNotRun says why a slot was not this host's to run, and who has it.
func whyNotRun(job string, r cronfence.SlotLockResult) string {
	who := r.Holder
	if who == "" {
		who = "another owner"
	}
	lease := "job:" + job
	switch r.Refusal {
	case store.ClaimCompleted:
		return "was completed by " + who
	case store.ClaimSkipped:
		return fmt.Sprintf("was skipped (recorded by %s)", who)
	case store.ClaimAttemptsExhausted:
		return fmt.Sprintf("has had its %d attempt%s, the last by %s (%s)", r.Attempt, plural(r.Attempt), who, r.Status)
	case store.ClaimPaused:
		return fmt.Sprintf("is skipped: job %q is paused (cronfence resume %s, or unset)", job, job)
	case store.ClaimNotDue:
		return "is not due yet by the database clock"
	case store.ClaimLeaseBusy:
		return fmt.Sprintf("waits for lease %s: its previous holder %s (generation %d) still has a fenced transaction open; try again", lease, who, r.Generation)
	case store.ClaimHeld:
		switch r.Claim.Recorded {
		case store.SlotSkipped:
			return fmt.Sprintf("came due while the job's previous run holds lease %s (%s at generation %d): recorded skipped", lease, who, r.Generation)
		case store.SlotBuffered:
			return fmt.Sprintf("came due while the job's previous run holds lease %s (%s at generation %d): buffered until it ends", lease, who, r.Generation)
		}
		return fmt.Sprintf("is running under %s at generation %d", who, r.Generation)
	}
	return fmt.Sprintf("was refused (%s, %s)", r.Refusal, who)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// runCommand runs the command with env added, under ctx.
func (c *lockCmd) runCommand(ctx context.Context, a *app, env []string) command.Result {
	// A second signal skips what is left of the kill grace.
	stop := a.onForce(func() {
		fmt.Fprintf(a.stderr, "cronfence: lock %q: second signal; killing %q now\n", c.Name, c.Command[0])
	})
	defer stop()
	return command.Run(ctx, command.Spec{
		Argv:       c.Command,
		Env:        env,
		KillGrace:  c.KillGrace,
		Inherit:    true,
		Supervisor: command.SelfSupervisor(),
		KillNow:    a.force,
	})
}

// ended returns how lock exits when the command never started (saying
// res.Err and news) or its lease was lost (err from Lock or LockSlot), nil
// otherwise.
func (c *lockCmd) ended(a *app, res command.Result, err, news error) error {
	if res.ExitCode == -1 { // never started
		code := exitCannotExecute
		switch {
		case errors.Is(res.Err, exec.ErrNotFound) || errors.Is(res.Err, fs.ErrNotExist):
			code = exitNotFound
		case a.ctx.Err() != nil || errors.Is(err, cronfence.ErrLeaseLost):
			code = exitFailure // cancelled between the acquisition and the start
		}
		return &exitError{code: code, err: errors.Join(res.Err, news)}
	}
	if errors.Is(err, cronfence.ErrLeaseLost) {
		code := res.ExitCode
		if code == 0 {
			code = exitFailure // cut short or not, it finished without the lease
		}
		return &exitError{code: code, err: fmt.Errorf("lock %q: lease lost while %q ran; it was cancelled: %w", c.Name, c.Command[0], err)}
	}
	return nil
}

// leaseLost is err when it says the lease was lost, nil otherwise (the
// command's own failure, already in its result).
func leaseLost(err error) error {
	if errors.Is(err, cronfence.ErrLeaseLost) {
		return err
	}
	return nil
}

// exit is how lock exits after the command ran: with its status.
func (c *lockCmd) exit(a *app, res command.Result) error {
	if a.ctx.Err() != nil {
		fmt.Fprintf(a.stderr, "cronfence: lock %q: interrupted; %q was cancelled\n", c.Name, c.Command[0])
	}
	if res.ExitCode != 0 {
		return &exitError{code: res.ExitCode}
	}
	return nil
}

// holderText names who holds the lease name and until when, as read now
// (one more round trip, on the busy path only): "another owner" when it
// cannot be read, or was released meanwhile.
func holderText(ctx context.Context, db *database, name string) string {
	l, err := db.LeaseGet(ctx, name)
	now, nerr := db.Now(ctx)
	if err != nil || nerr != nil || !l.ExpiresAt.After(now) {
		return "another owner"
	}
	return fmt.Sprintf("%s (generation %d) until %s, in %s unless renewed", l.Owner, l.Generation,
		l.ExpiresAt.UTC().Format(time.RFC3339), l.ExpiresAt.Sub(now).Round(time.Second))
}
