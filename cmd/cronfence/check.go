package main

// `cronfence check`: the verdict of absence monitoring, as an exit status
// for cron monitors, Nagios-style checks and Kubernetes probes.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/cmd/cronfence/internal/config"
	"github.com/cronfence/cronfence/internal/adminview"
	"github.com/cronfence/cronfence/store"
)

// Exit statuses of `check`.
const (
	checkHealthy  = 0 // no open alert but acknowledged ones, and someone is watching
	checkAlerting = 1 // at least one open alert nobody acknowledged
	checkUnknown  = 2 // cannot tell: see checkCmd.Help
)

type checkCmd struct {
	serverFlags
	Config     string        `name:"config" type:"path" placeholder:"FILE" help:"The serve config file, for its database: and sqlite: (unless --database is given)."`
	StaleAfter time.Duration `name:"stale-after" placeholder:"D" help:"How recent, by the database clock, a replica's heartbeat and the last pass of the absence checks must be; without both, check cannot tell. Defaults to the --config file's monitor: bounds (the larger of replica_stale and two check_every periods), else 30s (three default heartbeat periods)."`
	Timeout    time.Duration `name:"timeout" default:"10s" help:"Give up (exit 2) when the database or server has not answered within this."`

	staleAfterSet bool // --stale-after was given, so --config does not decide it
}

func (c *checkCmd) Help() string {
	return "Prints the open alerts, one a line (kind, subject, raised at, message), and exits " +
		"0 when healthy (no open alert), 1 when alerting, 2 when it cannot tell. " +
		"An alert an operator acknowledged (cronfence alerts ack) is not printed nor counted until it changes; " +
		"stderr says how many there are. " +
		"Cannot tell means: the database (or --server) does not answer within --timeout or refuses us; " +
		"its schema is not at this binary's version (not migrated, outdated, or migrated by a newer cronfence); " +
		"the store keeps no alerts; no replica has sent a heartbeat within --stale-after; or no replica has run " +
		"the absence checks within --stale-after (their lease, cronfence:monitor, never taken or not renewed): " +
		"then \"no alert\" would mean nothing. Open alerts are printed in those cases too. " +
		"Usage errors exit 2 as well. It never migrates the database."
}

// checkState is what check found.
type checkState struct {
	alerts  []client.Alert       // open alerts, newest first, acknowledged ones included
	live    int                  // replicas with a recent heartbeat
	total   int                  // replicas in the registry
	now     time.Time            // the database clock
	monitor *client.MonitorState // the absence checks' lease; nil if never taken
}

// verdict says why check cannot tell, or nil when the state can be trusted:
// a replica is live and the absence checks ran within staleAfter.
func (st checkState) verdict(staleAfter time.Duration) error {
	if st.live == 0 {
		return fmt.Errorf("no replica sent a heartbeat within %s (%d in the registry): nothing evaluates the absence checks", staleAfter, st.total)
	}
	if st.monitor == nil {
		return fmt.Errorf("no replica has ever run the absence checks (lease %s never taken)", cronfence.MonitorLeaseName)
	}
	last := time.Time{}
	if st.monitor.LastPassAt != nil {
		last, _ = time.Parse(time.RFC3339Nano, *st.monitor.LastPassAt)
	}
	if age := st.now.Sub(last); age > staleAfter {
		return fmt.Errorf("the absence checks last ran %s ago, on %s (more than %s)", age.Round(time.Second), st.monitor.Holder, staleAfter)
	}
	return nil
}

// errCannotTell wraps the reason check cannot tell.
type errCannotTell struct{ err error }

func (e errCannotTell) Error() string { return "cannot tell: " + e.err.Error() }
func (e errCannotTell) Unwrap() error { return e.err }

func cannotTell(format string, args ...any) error {
	return errCannotTell{fmt.Errorf(format, args...)}
}

// defaultStaleAfter is --stale-after without a --config to derive it from:
// three default heartbeat periods, the REST API's liveness bound.
const defaultStaleAfter = 30 * time.Second

// staleAfterOf derives --stale-after from a serve file's monitor: section:
// a replica is stale after replica_stale, and the checks' last pass may be
// up to one check_every old (two, to allow a late pass).
func staleAfterOf(m config.Monitor) time.Duration {
	return max(m.ReplicaStale, 2*m.CheckEvery, defaultStaleAfter/3)
}

func (c *checkCmd) Run(a *app) error {
	c.staleAfterSet = c.StaleAfter != 0
	if c.StaleAfter < 0 {
		return usageError("--stale-after must be positive, got %s", c.StaleAfter)
	}
	if c.Timeout <= 0 {
		return usageError("--timeout must be positive, got %s", c.Timeout)
	}
	if c.StaleAfter == 0 {
		c.StaleAfter = defaultStaleAfter
	}
	ctx, cancel := context.WithTimeout(a.ctx, c.Timeout)
	defer cancel()
	var st checkState
	var err error
	if c.Server != "" {
		st, err = c.viaServer(ctx)
	} else {
		st, err = c.direct(ctx, a)
	}
	if err != nil && ctx.Err() != nil && a.ctx.Err() == nil {
		// The bound ended whatever check waited on: say so.
		var ct errCannotTell
		if errors.As(err, &ct) {
			err = ct.err
		}
		err = cannotTell("no answer within --timeout %s: %w", c.Timeout, err)
	}
	// An acknowledged alert is known to an operator: until it changes
	// (then the checks end its acknowledgement), it is not alerting.
	alerting, acked := 0, 0
	for _, al := range st.alerts {
		if al.Acknowledged {
			acked++
			continue
		}
		alerting++
		fmt.Fprintf(a.stdout, "%s\t%s\t%s\t%s\n", al.Kind, flat.Replace(al.Subject), short(al.RaisedAt), oneLine(al.Message))
	}
	ackedText := ""
	if acked > 0 {
		ackedText = fmt.Sprintf(" (%d acknowledged: cronfence alerts)", acked)
	}
	switch {
	case err != nil:
		// Whatever went wrong (usage errors included) is exit 2: never 1,
		// which says "alerting".
		return &exitError{code: checkUnknown, err: fmt.Errorf("check: %w", err)}
	case st.verdict(c.StaleAfter) != nil:
		return &exitError{code: checkUnknown, err: fmt.Errorf("check: cannot tell: %w", st.verdict(c.StaleAfter))}
	case alerting > 0:
		return &exitError{code: checkAlerting, err: fmt.Errorf("check: alerting: %d open alert(s)%s, %d live replica(s)", alerting, ackedText, st.live)}
	}
	fmt.Fprintf(a.stderr, "cronfence: check: healthy: no open alert%s, %d live replica(s)\n", ackedText, st.live)
	return nil
}

// oneLine folds a message's whitespace so each alert stays on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// flat keeps a subject (a job name may hold any character) on its line and
// in its column.
var flat = strings.NewReplacer("\t", " ", "\n", " ", "\r", " ")

// direct reads the verdict from the database.
func (c *checkCmd) direct(ctx context.Context, a *app) (checkState, error) {
	g := a.globals
	if c.Config != "" {
		f, err := config.LoadFor(c.Config, g.fileReads(config.Reads{Monitor: true}))
		if err != nil {
			return checkState{}, &exitError{code: exitUsage, err: err}
		}
		g = configGlobals(g, f)
		if !c.staleAfterSet {
			c.StaleAfter = staleAfterOf(f.Monitor)
		}
	}
	// As the admin commands: a missing SQLite file is not created, and a
	// schema at another version is not migrated.
	db, err := g.openExisting(ctx)
	if err != nil {
		return checkState{}, cannotTell("%w", err)
	}
	defer db.close()
	reps, op, err := adminview.Replicas(ctx, db.Store, cronfence.MonitorLeaseName, c.StaleAfter)
	if err != nil {
		return checkState{}, cannotTell("%s in %s: %w", op, db.where, err)
	}
	alerts, err := adminview.Alerts(ctx, db.Store, store.AlertListParams{OpenOnly: true, Limit: client.MaxAlertsLimit})
	if err != nil {
		return checkState{}, cannotTell("listing the open alerts in %s: %w", db.where, err)
	}
	return checkState{alerts: alerts, live: reps.Live(), total: len(reps.Replicas), now: parseRFC3339(reps.Now), monitor: reps.Monitor}, nil
}

// viaServer reads the verdict from a running serve --listen. Liveness is
// judged here, by --stale-after against the server's database clock.
func (c *checkCmd) viaServer(ctx context.Context) (checkState, error) {
	// /readyz tells an unreachable store and a schema at another version.
	if err := c.call(ctx, http.MethodGet, "/readyz", nil, nil); err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return checkState{}, err
		}
		return checkState{}, cannotTell("%s is not ready: %w", c.Server, err)
	}
	var reps client.ReplicaList
	if err := c.call(ctx, http.MethodGet, "/api/admin/cron/replicas", nil, &reps); err != nil {
		return checkState{}, cannotTell("listing replicas: %w", err)
	}
	var out struct {
		Alerts []client.Alert `json:"alerts"`
	}
	if err := c.call(ctx, http.MethodGet, "/api/admin/cron/alerts?open=true&limit="+strconv.Itoa(client.MaxAlertsLimit), nil, &out); err != nil {
		return checkState{}, cannotTell("listing the open alerts: %w", err)
	}
	st := checkState{alerts: out.Alerts, total: len(reps.Replicas), now: parseRFC3339(reps.Now), monitor: reps.Monitor}
	if st.now.IsZero() {
		return st, cannotTell("the server's replica list has no database clock (now)")
	}
	for _, r := range reps.Replicas {
		if hb := parseRFC3339(r.HeartbeatAt); !hb.IsZero() && st.now.Sub(hb) <= c.StaleAfter {
			st.live++
		}
	}
	return st, nil
}

// parseRFC3339 parses one of the API's times; zero when nil or malformed.
func parseRFC3339(s *string) time.Time {
	if s == nil {
		return time.Time{}
	}
	t, _ := time.Parse(time.RFC3339Nano, *s)
	return t
}
