package main

// `cronfence alerts`: the alerts of absence monitoring (list) and an
// operator's acknowledgement of one (ack), directly on the database or,
// with --server, through a running serve's REST API, as the other admin
// commands.

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"text/tabwriter"

	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/cmd/cronfence/internal/config"
	"github.com/cronfence/cronfence/internal/adminview"
	"github.com/cronfence/cronfence/store"
)

type alertsCmd struct {
	List alertsListCmd `cmd:"" default:"withargs" help:"List the alerts, newest first: the open ones, or all with --all (the default command)."`
	Ack  alertsAckCmd  `cmd:"" help:"Acknowledge the open alert KIND SUBJECT: check stops counting it and the webhook does not send it again, until it changes or is resolved and raised again."`
}

// alertsFlags are what list and ack share.
type alertsFlags struct {
	serverFlags
	Config string `name:"config" type:"path" placeholder:"FILE" help:"The serve config file, for direct mode: its database as serve resolves it (--database, else its database:, else its sqlite: file)."`
}

type alertsListCmd struct {
	alertsFlags
	All     bool   `name:"all" short:"a" help:"Resolved alerts too, not only the open ones."`
	Kind    string `name:"kind" placeholder:"KIND" help:"Only alerts of this kind (deadline_missed, orphan_job, …)."`
	Subject string `name:"subject" placeholder:"NAME" help:"Only alerts about this job (or replica, for clock_offset)."`
	Limit   int    `name:"limit" short:"n" default:"50" help:"How many, newest first (at most 1000)."`
	JSON    bool   `name:"json" help:"Print one JSON object a line, in the REST API's shape."`
}

func (c *alertsListCmd) Run(a *app) error {
	if c.Limit < 1 || c.Limit > client.MaxAlertsLimit {
		return usageError("-n must be between 1 and %d, got %d", client.MaxAlertsLimit, c.Limit)
	}
	if c.Kind != "" {
		if err := store.ValidateAlertKind(store.AlertKind(c.Kind)); err != nil {
			return usageError("--kind: %w", err)
		}
	}
	var alerts []client.Alert
	if c.Server != "" {
		q := url.Values{"open": {strconv.FormatBool(!c.All)}, "limit": {strconv.Itoa(c.Limit)}}
		if c.Kind != "" {
			q.Set("kind", c.Kind)
		}
		if c.Subject != "" {
			q.Set("subject", c.Subject)
		}
		var out struct {
			Alerts []client.Alert `json:"alerts"`
		}
		if err := c.call(a.ctx, http.MethodGet, "/api/admin/cron/alerts?"+q.Encode(), nil, &out); err != nil {
			return err
		}
		alerts = out.Alerts
	} else {
		db, err := c.open(a)
		if err != nil {
			return err
		}
		defer db.close()
		p := store.AlertListParams{OpenOnly: !c.All, Kind: store.AlertKind(c.Kind), Subject: c.Subject, Limit: c.Limit}
		if alerts, err = adminview.Alerts(a.ctx, db.Store, p); err != nil {
			return wrapInvalid(fmt.Errorf("listing the alerts in %s: %w", db.where, err))
		}
	}
	if c.JSON {
		enc := json.NewEncoder(a.stdout)
		for _, al := range alerts {
			if err := enc.Encode(al); err != nil {
				return err
			}
		}
		return nil
	}
	if len(alerts) == 0 {
		what := "open alert"
		if c.All {
			what = "alert"
		}
		fmt.Fprintf(a.stderr, "cronfence: alerts: no %s\n", what)
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tSUBJECT\tRAISED\tSTATE\tMESSAGE")
	for _, al := range alerts {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", al.ID, al.Kind, flat.Replace(al.Subject), short(al.RaisedAt), alertState(al), oneLine(al.Message))
	}
	return tw.Flush()
}

// alertState is an alert's state for a table: open, acknowledged (by whom,
// when, why) or resolved.
func alertState(al client.Alert) string {
	state := "open"
	if !al.Open {
		state = "resolved " + short(al.ResolvedAt)
	}
	if k := al.Ack; k != nil {
		if al.Open {
			state = "acknowledged"
		} else {
			state += ", was acknowledged"
		}
		state += " by " + flat.Replace(k.By) + " at " + short(k.At) + noteText(oneLine(k.Note))
	}
	return state
}

type alertsAckCmd struct {
	alertsFlags
	Kind    string `arg:"" help:"The alert's kind (deadline_missed, orphan_job, …), as cronfence check and cronfence alerts print it."`
	Subject string `arg:"" help:"What it is about: the job (or replica, for clock_offset)."`
	ID      int64  `name:"id" placeholder:"N" help:"The alert's id, as cronfence alerts prints it: refuse when the open alert is another (resolved and raised again since)."`
	Note    string `name:"note" help:"Why, or what is being done; recorded with the acknowledgement."`
	By      string `name:"by" help:"Who, recorded with the acknowledgement (direct mode; a server records its token's name). Defaults to $USER, else \"cli\"."`
}

func (c *alertsAckCmd) Run(a *app) error {
	if err := store.ValidateAlertRef(store.AlertKind(c.Kind), c.Subject); err != nil {
		return usageError("%w", err)
	}
	if c.ID < 0 {
		return usageError("--id must be positive, got %d", c.ID)
	}
	var al client.Alert
	if c.Server != "" {
		err := c.call(a.ctx, http.MethodPost, client.AlertAckPath(c.Kind, c.Subject), map[string]any{"note": c.Note, "alertId": c.ID}, &al)
		var ae *client.Error
		if errors.As(err, &ae) && ae.Code == "ALERT_NOT_FOUND" {
			return c.notOpen(c.Server)
		}
		if err != nil {
			return err
		}
	} else {
		by := c.By
		if by == "" {
			by = os.Getenv("USER")
		}
		if by == "" {
			by = "cli"
		}
		db, err := c.open(a)
		if err != nil {
			return err
		}
		defer db.close()
		row, err := db.AlertAcknowledge(a.ctx, store.AlertAcknowledgeParams{Kind: store.AlertKind(c.Kind), Subject: c.Subject, ID: c.ID, By: by, Note: c.Note})
		if errors.Is(err, store.ErrNotFound) {
			return c.notOpen(db.where)
		}
		if err != nil {
			return wrapInvalid(fmt.Errorf("acknowledging the alert in %s: %w", db.where, err))
		}
		al = adminview.AlertOf(row)
	}
	fmt.Fprintf(a.stdout, "%s %s (alert %d): %s; silenced until it changes or is resolved\n",
		al.Kind, flat.Replace(al.Subject), al.ID, alertState(al))
	return nil
}

// notOpen is the error for an alert that is not open: exit 1, as the
// API's 404.
func (c *alertsAckCmd) notOpen(where string) error {
	what := fmt.Sprintf("no open alert %s of %q in %s", c.Kind, c.Subject, where)
	if c.ID != 0 {
		what = fmt.Sprintf("no open alert %s of %q with id %d in %s", c.Kind, c.Subject, c.ID, where)
	}
	return &exitError{code: exitFailure, err: errors.New(what + " (resolved, or never raised: cronfence alerts --all lists them)")}
}

// open opens the database of direct mode: the --config file's as serve
// resolves it, else the global flags'; never created nor migrated.
func (c *alertsFlags) open(a *app) (*database, error) {
	f, err := loadConfig(a.globals, c.Config, config.Reads{}) // its database only
	if err != nil {
		return nil, err
	}
	return openDirect(a, f)
}
