package main

// Where `cronfence schedules` reads and writes stored schedules: a
// running serve's REST API (--server), or the database directly through
// the scheduler's own API (cronfence.Schedules), which checks the spec,
// zone and kind as a server does. Both answer in the API's types and
// fail alike: an unknown schedule exit 1, a stale version exit 3, bad
// input exit 2.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/cmd/cronfence/internal/config"
	"github.com/cronfence/cronfence/internal/adminview"
	"github.com/cronfence/cronfence/store"
)

// exitConflict is the exit status of a write refused because the
// schedule changed since its version was read (or its name is taken):
// as trigger's exit 3, the API's 409.
const exitConflict = 3

// scheduleStore is what the schedules commands use, in either mode.
type scheduleStore interface {
	list(ctx context.Context, after string, limit int) (client.SchedulePage, error)
	get(ctx context.Context, name string) (client.Schedule, error)
	create(ctx context.Context, name string, set store.ScheduleSettings) (client.Schedule, error)
	update(ctx context.Context, name string, version int64, set store.ScheduleSettings) (client.Schedule, error)
	remove(ctx context.Context, name string, version int64) (client.Schedule, error)
	audit(ctx context.Context, name string, before int64, limit int) (client.ScheduleAudit, error)
	close()
}

// schedulesFlags are what every schedules command shares.
type schedulesFlags struct {
	serverFlags
	Config string `name:"config" type:"path" placeholder:"FILE" help:"The serve config file, for direct mode: its database as serve resolves it (--database, else its database:, else its sqlite: file); its kinds: (and shell, with schedules.allow_shell) are known kinds, its jobs' names are taken."`
	By     string `name:"by" help:"Who, recorded with a change (direct mode; a server records its token's name). Defaults to $USER, else \"cli\"."`
}

// open returns the store of the mode the flags select.
func (f *schedulesFlags) open(a *app) (scheduleStore, error) {
	if f.Server != "" {
		if f.Token == "" {
			return nil, usageError("--server needs --token (or CRONFENCE_TOKEN)")
		}
		return &serverSchedules{s: &f.serverFlags}, nil
	}
	file, err := loadConfig(a.globals, f.Config, config.Reads{})
	if err != nil {
		return nil, err
	}
	db, err := openDirect(a, file)
	if err != nil {
		return nil, err
	}
	// A scheduler that is never started: its Schedules API checks and
	// writes as a server's does. The config's kinds are known here, so a
	// schedule of one can be created while no replica runs.
	s, err := cronfence.New(cronfence.Config{Store: db.Store, DisableTimers: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		db.close()
		return nil, err
	}
	d := &directSchedules{db: db, s: s.Schedules(), by: f.By}
	if file != nil {
		noop := func(context.Context, *cronfence.Run) error { return nil }
		for _, k := range file.Kinds {
			_ = s.RegisterKind(k.Name, noop)
		}
		if file.Schedules.AllowShell {
			_ = s.RegisterKind(config.ShellKind, noop)
		}
		for _, j := range file.Jobs {
			d.declared = append(d.declared, j.Name)
		}
	}
	if d.by == "" {
		d.by = os.Getenv("USER")
	}
	if d.by == "" {
		d.by = "cli"
	}
	return d, nil
}

// serverSchedules speaks to a running serve's REST API.
type serverSchedules struct {
	s *serverFlags
}

func (c *serverSchedules) client() *client.Client {
	return &client.Client{Base: c.s.Server, Token: c.s.Token}
}

func (c *serverSchedules) call(ctx context.Context, f func(ctx context.Context, cl *client.Client) error) error {
	ctx, cancel := context.WithTimeout(ctx, httpTimeout)
	defer cancel()
	return serverError(f(ctx, c.client()))
}

func (c *serverSchedules) list(ctx context.Context, after string, limit int) (page client.SchedulePage, err error) {
	err = c.call(ctx, func(ctx context.Context, cl *client.Client) error {
		page, err = cl.Schedules(ctx, after, limit)
		return err
	})
	return page, err
}

func (c *serverSchedules) get(ctx context.Context, name string) (sc client.Schedule, err error) {
	err = c.call(ctx, func(ctx context.Context, cl *client.Client) error { sc, err = cl.Schedule(ctx, name); return err })
	return sc, err
}

func (c *serverSchedules) create(ctx context.Context, name string, set store.ScheduleSettings) (sc client.Schedule, err error) {
	err = c.call(ctx, func(ctx context.Context, cl *client.Client) error {
		sc, err = cl.CreateSchedule(ctx, name, adminview.SettingsOf(set))
		return err
	})
	return sc, err
}

func (c *serverSchedules) update(ctx context.Context, name string, version int64, set store.ScheduleSettings) (sc client.Schedule, err error) {
	err = c.call(ctx, func(ctx context.Context, cl *client.Client) error {
		sc, err = cl.UpdateSchedule(ctx, name, version, adminview.SettingsOf(set))
		return err
	})
	return sc, err
}

func (c *serverSchedules) remove(ctx context.Context, name string, version int64) (sc client.Schedule, err error) {
	err = c.call(ctx, func(ctx context.Context, cl *client.Client) error {
		sc, err = cl.DeleteSchedule(ctx, name, version)
		return err
	})
	return sc, err
}

func (c *serverSchedules) audit(ctx context.Context, name string, before int64, limit int) (a client.ScheduleAudit, err error) {
	err = c.call(ctx, func(ctx context.Context, cl *client.Client) error {
		a, err = cl.ScheduleAudit(ctx, name, before, limit)
		return err
	})
	return a, err
}

func (c *serverSchedules) close() {}

// serverError gives an API error the exit status direct mode gives it.
func serverError(err error) error {
	var ae *client.Error
	if !errors.As(err, &ae) {
		return err
	}
	switch ae.Status {
	case http.StatusBadRequest:
		return &exitError{code: exitUsage, err: ae}
	case http.StatusConflict:
		return &exitError{code: exitConflict, err: ae}
	}
	return ae
}

// directSchedules works on the database.
type directSchedules struct {
	db       *database
	s        *cronfence.Schedules
	by       string
	declared []string // the --config file's job names
}

func (d *directSchedules) list(ctx context.Context, after string, limit int) (client.SchedulePage, error) {
	list, err := d.s.List(ctx, after, limit)
	if err != nil {
		return client.SchedulePage{}, d.fail(err)
	}
	page := client.SchedulePage{Schedules: make([]client.Schedule, 0, len(list))}
	for _, sc := range list {
		page.Schedules = append(page.Schedules, adminview.ScheduleOf(sc))
	}
	if len(list) == limit {
		next := list[len(list)-1].Name
		page.Next = &next
	}
	return page, nil
}

func (d *directSchedules) get(ctx context.Context, name string) (client.Schedule, error) {
	sc, err := d.s.Get(ctx, name)
	return adminview.ScheduleOf(sc), d.fail(err)
}

func (d *directSchedules) create(ctx context.Context, name string, set store.ScheduleSettings) (client.Schedule, error) {
	if slices.Contains(d.declared, name) {
		return client.Schedule{}, usageError("schedule name %q is a job's of %s; choose another", name, d.db.where)
	}
	sc, err := d.s.Create(ctx, name, set, d.by)
	return adminview.ScheduleOf(sc), d.fail(err)
}

func (d *directSchedules) update(ctx context.Context, name string, version int64, set store.ScheduleSettings) (client.Schedule, error) {
	sc, err := d.s.Update(ctx, name, version, set, d.by)
	return adminview.ScheduleOf(sc), d.fail(err)
}

func (d *directSchedules) remove(ctx context.Context, name string, version int64) (client.Schedule, error) {
	sc, err := d.s.Delete(ctx, name, version, d.by)
	return adminview.ScheduleOf(sc), d.fail(err)
}

func (d *directSchedules) audit(ctx context.Context, name string, before int64, limit int) (client.ScheduleAudit, error) {
	changes, err := d.s.Audit(ctx, name, before, limit)
	if err != nil {
		return client.ScheduleAudit{}, d.fail(err)
	}
	out := client.ScheduleAudit{Changes: make([]client.ScheduleChange, 0, len(changes))}
	for _, ch := range changes {
		out.Changes = append(out.Changes, adminview.ChangeOf(ch))
	}
	if len(changes) == limit {
		next := changes[len(changes)-1].Seq
		out.Next = &next
	}
	return out, nil
}

func (d *directSchedules) close() { d.db.close() }

// fail gives an error of the Schedules API its exit status, said once
// (main prefixes "cronfence: ").
func (d *directSchedules) fail(err error) error {
	if err == nil {
		return nil
	}
	// The scheduler joins the invalid-argument sentinel on a line of its own.
	msg := strings.TrimSuffix(err.Error(), "\n"+store.ErrInvalidArgument.Error())
	msg = strings.ReplaceAll(strings.TrimPrefix(msg, "cronfence: "), "\n", ": ")
	var conflict *store.ConflictError
	switch {
	case errors.Is(err, cronfence.ErrUnknownSchedule):
		return &exitError{code: exitFailure, err: fmt.Errorf("%s in %s", msg, d.db.where)}
	case errors.As(err, &conflict):
		return &exitError{code: exitConflict, err: fmt.Errorf("%s (in %s)", msg, d.db.where)}
	case errors.Is(err, store.ErrInvalidArgument):
		return &exitError{code: exitUsage, err: errors.New(msg)}
	}
	return fmt.Errorf("%s (in %s)", msg, d.db.where)
}
