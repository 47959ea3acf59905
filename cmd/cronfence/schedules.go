package main

// `cronfence schedules`: the stored schedules, jobs kept in the database
// and changed while the replicas run (ls, show, add, edit, rm, audit),
// directly on the database or, with --server, through a running serve's
// REST API, as the other admin commands.

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/internal/adminview"
	"github.com/cronfence/cronfence/store"
)

type schedulesCmd struct {
	Ls    schedulesLsCmd    `cmd:"" default:"withargs" help:"List the stored schedules in name order (the default command)."`
	Show  schedulesShowCmd  `cmd:"" help:"Show one stored schedule, with its version."`
	Add   schedulesAddCmd   `cmd:"" help:"Create a stored schedule: every replica that runs its kind runs it, without a restart."`
	Edit  schedulesEditCmd  `cmd:"" help:"Change a stored schedule: the flags given replace its settings, the others stay."`
	Rm    schedulesRmCmd    `cmd:"" help:"Delete a stored schedule: it stops on every replica; its runs stay."`
	Audit schedulesAuditCmd `cmd:"" help:"List the changes of the stored schedules (of NAME when given), newest first: who, when, what changed."`
}

func (c *schedulesCmd) Help() string {
	return "Direct mode (no --server) works on the database of --config FILE (or --database, --sqlite) and checks as a server does: " +
		"a kind must be run by a live replica, or be one of the --config file's kinds:. " +
		"Exit 1 for an unknown schedule, 2 for bad input (the message names the field), 3 when the version is stale or the name is taken (read it again: cronfence schedules show NAME)."
}

// settingsFlags are a schedule's settings as flags; a flag left out is
// nil: add takes the default, edit keeps the current value.
type settingsFlags struct {
	Spec      *string        `name:"spec" placeholder:"SPEC" help:"Cron spec: 5 fields, 6 with seconds, @daily, @every 1h (required by add)."`
	TZ        *string        `name:"tz" placeholder:"ZONE" help:"IANA time zone the spec is read in (default UTC)."`
	Kind      *string        `name:"kind" placeholder:"KIND" help:"The handler's kind: a kinds: entry of the replicas' config, or shell (required by add)."`
	Args      *string        `name:"args" placeholder:"JSON" help:"The handler's arguments, any JSON value (at most 64 KiB): CRONFENCE_ARGS of the kind's command; null for none."`
	Overlap   *string        `name:"overlap" placeholder:"POLICY" help:"skip (default), allow or buffer-one."`
	Timeout   *time.Duration `name:"timeout" placeholder:"DURATION" help:"Cancel a run after this long (default none)."`
	LeaseTTL  *time.Duration `name:"lease-ttl" placeholder:"DURATION" help:"The run's lease TTL (default 90s)."`
	CatchUp   *string        `name:"catch-up" placeholder:"POLICY" help:"Which missed slots run: none, latest or all (default latest with --catch-up-window, none without)."`
	Window    *time.Duration `name:"catch-up-window" placeholder:"DURATION" help:"How late a missed slot still runs (default none)."`
	Jitter    *time.Duration `name:"jitter" placeholder:"DURATION" help:"Delay each slot's start by up to this long, the same on every replica (default none)."`
	MaxCatch  *int           `name:"max-catch-up" placeholder:"N" help:"With --catch-up all: how many slots back catch-up looks (default 100, at most 10000)."`
	Attempts  *int           `name:"attempts" placeholder:"N" help:"Attempts per slot (default 3)."`
	Backoff   *time.Duration `name:"backoff" placeholder:"DURATION" help:"Wait before the first retry (default 10s)."`
	Deadline  *time.Duration `name:"deadline" placeholder:"DURATION" help:"Refused for now: the absence checks do not watch stored schedules, so a deadline would raise nothing (docs/schedules.md)."`
	Disabled  *bool          `name:"disabled" negatable:"" help:"Keep it stored but not run (--no-disabled: run it)."`
	Exclude   []string       `name:"exclude" sep:"none" placeholder:"ENTRY" help:"An exclusion window, a range FROM/TO (2026-12-24/2026-12-27) or five cron fields (\"* * 25 12 *\"): its slots are skipped, reason excluded. Repeat for more; on edit, the list given replaces the schedule's."`
	NoExclude bool           `name:"no-exclude" help:"Remove every exclusion window (edit)."`
}

// apply sets the flags given over set, refusing bad values naming the
// flag.
func (f *settingsFlags) apply(set store.ScheduleSettings) (store.ScheduleSettings, error) {
	str := func(p *string, to *string) {
		if p != nil {
			*to = *p
		}
	}
	str(f.Spec, &set.Spec)
	str(f.TZ, &set.TimeZone)
	str(f.Kind, &set.Kind)
	str(f.Overlap, &set.Overlap)
	str(f.CatchUp, &set.CatchUp)
	if f.Args != nil {
		switch a := strings.TrimSpace(*f.Args); {
		case a == "" || a == "null":
			set.Args = nil
		case !json.Valid([]byte(a)):
			return set, usageError("--args: %q is not JSON (quote it for the shell: --args '{\"tenant\": 42}')", truncateText(a, 80))
		default:
			set.Args = json.RawMessage(a)
		}
	}
	for _, d := range []struct {
		flag string
		p    *time.Duration
		to   *time.Duration
	}{
		{"--timeout", f.Timeout, &set.Timeout}, {"--lease-ttl", f.LeaseTTL, &set.LeaseTTL}, {"--catch-up-window", f.Window, &set.CatchUpWindow},
		{"--backoff", f.Backoff, &set.RetryBackoff}, {"--deadline", f.Deadline, &set.Deadline}, {"--jitter", f.Jitter, &set.Jitter},
	} {
		if d.p == nil {
			continue
		}
		if *d.p < 0 {
			return set, usageError("%s must not be negative, got %s", d.flag, *d.p)
		}
		*d.to = *d.p
	}
	if f.Attempts != nil {
		if *f.Attempts < 1 {
			return set, usageError("--attempts must be at least 1, got %d", *f.Attempts)
		}
		set.MaxAttempts = *f.Attempts
	}
	if f.MaxCatch != nil {
		if *f.MaxCatch < 1 || *f.MaxCatch > cronfence.MaxCatchUpLimit {
			return set, usageError("--max-catch-up must be from 1 to %d, got %d", cronfence.MaxCatchUpLimit, *f.MaxCatch)
		}
		set.MaxCatchUp = *f.MaxCatch
	}
	if f.Disabled != nil {
		set.Disabled = *f.Disabled
	}
	switch {
	case f.NoExclude && len(f.Exclude) > 0:
		return set, usageError("--exclude and --no-exclude: give one")
	case f.NoExclude:
		set.Exclude = nil
	case len(f.Exclude) > 0:
		set.Exclude = f.Exclude
	}
	return set, nil
}

// validSchedule checks a schedule name argument.
func validSchedule(name string) error {
	if len(name) > store.MaxScheduleNameLength {
		return usageError("schedule name must be at most %d bytes, got %d", store.MaxScheduleNameLength, len(name))
	}
	if err := store.ValidateName("schedule name", name); err != nil {
		return usageError("%w", err)
	}
	return nil
}

type schedulesLsCmd struct {
	schedulesFlags
	After string `name:"after" placeholder:"NAME" help:"Start after this name (the last of the previous page)."`
	Limit int    `name:"limit" short:"n" default:"100" help:"How many (at most 1000)."`
	JSON  bool   `name:"json" help:"Print one JSON object a line, in the REST API's shape."`
}

func (c *schedulesLsCmd) Run(a *app) error {
	if c.Limit < 1 || c.Limit > client.MaxSchedulesLimit {
		return usageError("-n must be between 1 and %d, got %d", client.MaxSchedulesLimit, c.Limit)
	}
	st, err := c.open(a)
	if err != nil {
		return err
	}
	defer st.close()
	page, err := st.list(a.ctx, c.After, c.Limit)
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSONLines(a, page.Schedules)
	}
	if len(page.Schedules) == 0 {
		fmt.Fprintln(a.stderr, "cronfence: schedules: none stored")
		return nil
	}
	tw := newTable(a.stdout, "NAME\tKIND\tSPEC\tZONE\tENABLED\tVERSION\tUPDATED")
	for _, sc := range page.Schedules {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s by %s\n", flat.Replace(sc.Name), flat.Replace(sc.Kind), flat.Replace(sc.Spec),
			zoneText(sc.TimeZone), enabledText(!sc.Disabled), sc.Version, short(sc.UpdatedAt), flat.Replace(sc.UpdatedBy))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if page.Next != nil {
		fmt.Fprintf(a.stderr, "cronfence: schedules: more after %q (--after %q)\n", *page.Next, *page.Next)
	}
	return nil
}

type schedulesShowCmd struct {
	schedulesFlags
	Name string `arg:"" help:"Schedule name."`
	JSON bool   `name:"json" help:"Print the REST API's JSON."`
}

func (c *schedulesShowCmd) Run(a *app) error {
	if err := validSchedule(c.Name); err != nil {
		return err
	}
	st, err := c.open(a)
	if err != nil {
		return err
	}
	defer st.close()
	sc, err := st.get(a.ctx, c.Name)
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSONLines(a, []client.Schedule{sc})
	}
	printSchedule(a, sc)
	return nil
}

type schedulesAddCmd struct {
	schedulesFlags
	Name string `arg:"" help:"Schedule name: unique among stored schedules and the replicas' declared jobs."`
	settingsFlags
}

func (c *schedulesAddCmd) Run(a *app) error {
	if err := validSchedule(c.Name); err != nil {
		return err
	}
	if c.Spec == nil || c.Kind == nil {
		return usageError("schedules add needs --spec SPEC and --kind KIND")
	}
	set, err := c.apply(store.ScheduleSettings{})
	if err != nil {
		return err
	}
	st, err := c.open(a)
	if err != nil {
		return err
	}
	defer st.close()
	sc, err := st.create(a.ctx, c.Name, set)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "%s: created at version %d by %s (kind %s, %s %s)\n", flat.Replace(sc.Name), sc.Version, flat.Replace(sc.CreatedBy),
		flat.Replace(sc.Kind), flat.Replace(sc.Spec), zoneText(sc.TimeZone))
	return nil
}

type schedulesEditCmd struct {
	schedulesFlags
	Name    string `arg:"" help:"Schedule name."`
	Version int64  `name:"if-version" placeholder:"N" help:"The version you read (cronfence schedules show): refused, exit 3, when it changed since. Default: the version read now, just before the write."`
	settingsFlags
}

func (c *schedulesEditCmd) Run(a *app) error {
	if err := validSchedule(c.Name); err != nil {
		return err
	}
	if c.Version < 0 {
		return usageError("--if-version must be positive, got %d", c.Version)
	}
	st, err := c.open(a)
	if err != nil {
		return err
	}
	defer st.close()
	cur, err := st.get(a.ctx, c.Name)
	if err != nil {
		return err
	}
	version := cur.Version
	if c.Version != 0 {
		version = c.Version
	}
	base, err := adminview.Settings(cur.ScheduleSettings)
	if err != nil {
		return fmt.Errorf("schedule %q as read: %w", c.Name, err)
	}
	set, err := c.apply(base)
	if err != nil {
		return err
	}
	sc, err := st.update(a.ctx, c.Name, version, set)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "%s: version %d → %d by %s\n", flat.Replace(sc.Name), version, sc.Version, flat.Replace(sc.UpdatedBy))
	return nil
}

type schedulesRmCmd struct {
	schedulesFlags
	Name    string `arg:"" help:"Schedule name."`
	Version int64  `name:"if-version" placeholder:"N" help:"The version you read: refused, exit 3, when it changed since. Default: whatever version it has."`
}

func (c *schedulesRmCmd) Run(a *app) error {
	if err := validSchedule(c.Name); err != nil {
		return err
	}
	if c.Version < 0 {
		return usageError("--if-version must be positive, got %d", c.Version)
	}
	st, err := c.open(a)
	if err != nil {
		return err
	}
	defer st.close()
	sc, err := st.remove(a.ctx, c.Name, c.Version)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "%s: deleted (it was at version %d); its runs stay\n", flat.Replace(sc.Name), sc.Version)
	return nil
}

type schedulesAuditCmd struct {
	schedulesFlags
	Name   string `arg:"" optional:"" help:"Only this schedule's changes."`
	Before int64  `name:"before" placeholder:"SEQ" help:"Only changes older than this sequence number (the last of the previous page)."`
	Limit  int    `name:"limit" short:"n" default:"50" help:"How many, newest first (at most 1000)."`
	JSON   bool   `name:"json" help:"Print one JSON object a line, in the REST API's shape."`
}

func (c *schedulesAuditCmd) Run(a *app) error {
	if c.Name != "" {
		if err := validSchedule(c.Name); err != nil {
			return err
		}
	}
	if c.Limit < 1 || c.Limit > client.MaxSchedulesLimit {
		return usageError("-n must be between 1 and %d, got %d", client.MaxSchedulesLimit, c.Limit)
	}
	if c.Before < 0 {
		return usageError("--before must be positive, got %d", c.Before)
	}
	st, err := c.open(a)
	if err != nil {
		return err
	}
	defer st.close()
	au, err := st.audit(a.ctx, c.Name, c.Before, c.Limit)
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSONLines(a, au.Changes)
	}
	if len(au.Changes) == 0 {
		fmt.Fprintln(a.stderr, "cronfence: schedules audit: no changes")
		return nil
	}
	tw := newTable(a.stdout, "SEQ\tAT\tBY\tACTION\tNAME\tVERSION\tCHANGE")
	for _, ch := range au.Changes {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\n", ch.Seq, short(ch.At), flat.Replace(ch.By), ch.Action, flat.Replace(ch.Name), ch.Version, oneLine(changeText(ch)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if au.Next != nil {
		fmt.Fprintf(a.stderr, "cronfence: schedules audit: older changes before %d (--before %d)\n", *au.Next, *au.Next)
	}
	return nil
}
