package adminapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/store"
)

// DefaultReplicaLiveFor is Options.ReplicaLiveFor's default: a replica
// whose last heartbeat is older than this, by the database clock, is not
// live. Three heartbeat periods, as the absence checks' default
// (cronfence.AlertThresholds.ReplicaStale), so the API, the dashboard and
// the checks agree on which replicas are live, and one slow round trip does
// not flap it.
const DefaultReplicaLiveFor = 3 * cronfence.DefaultHeartbeatEvery

// Default and maximum ?limit= of the alerts endpoint.
const (
	DefaultAlertsLimit = 50
	MaxAlertsLimit     = 1000
)

// Alert is one alert as the API answers it. "details" is never null;
// "resolvedAt" is null while the alert is open. "ack" is the operator's
// acknowledgement, null when none (a resolved alert keeps the one it had);
// "acknowledged" says the alert is open and acknowledged: until it changes,
// `cronfence check` does not count it and the webhook does not send it
// again.
type Alert struct {
	ID           int64             `json:"id"`
	Kind         string            `json:"kind"`
	Subject      string            `json:"subject"`
	Message      string            `json:"message"`
	Details      map[string]string `json:"details"`
	RaisedBy     string            `json:"raisedBy"`
	RaisedAt     *string           `json:"raisedAt"`
	LastSeenAt   *string           `json:"lastSeenAt"`
	ResolvedAt   *string           `json:"resolvedAt"`
	Open         bool              `json:"open"`
	Acknowledged bool              `json:"acknowledged"`
	Ack          *AlertAck         `json:"ack"`
}

// AlertAck is an operator's acknowledgement of an alert: who (the admin
// token's name, or the CLI's --by), when (the database clock) and why.
type AlertAck struct {
	By   string  `json:"by"`
	At   *string `json:"at"`
	Note string  `json:"note"`
}

// AlertOf is the API view of an alert row.
func AlertOf(a store.Alert) Alert {
	v := Alert{
		ID: a.ID, Kind: string(a.Kind), Subject: a.Subject, Message: a.Message, Details: a.Details,
		RaisedBy: a.RaisedBy, RaisedAt: timeOrNil(a.RaisedAt), LastSeenAt: timeOrNil(a.LastSeenAt),
		ResolvedAt: timeOrNil(a.ResolvedAt), Open: a.Open(), Acknowledged: a.Acknowledged(),
	}
	if !a.Ack.IsZero() {
		v.Ack = &AlertAck{By: a.Ack.By, At: timeOrNil(a.Ack.At), Note: a.Ack.Note}
	}
	if v.Details == nil {
		v.Details = map[string]string{}
	}
	return v
}

// ReplicaJob is one job as a replica registered it. Durations are Go
// duration strings ("1m30s"), as in the config file.
type ReplicaJob struct {
	Name          string `json:"name"`
	Schedule      string `json:"schedule"`
	TimeZone      string `json:"timeZone"`
	Timeout       string `json:"timeout"`
	LeaseTTL      string `json:"leaseTTL"`
	CatchUpWindow string `json:"catchUpWindow"`
	Overlap       string `json:"overlap"`
	Deadline      string `json:"deadline"`
	MaxAttempts   int    `json:"maxAttempts"`
	Disabled      bool   `json:"disabled"`
	Hash          string `json:"hash"`
}

// Replica is one row of the replica registry. "live" says whether its last
// heartbeat is within ReplicaLiveFor of the database clock, and
// "heartbeatAge" how old it is; "clockOffset" is the replica's clock minus
// the database clock as it last measured it (positive: ahead).
type Replica struct {
	Owner        string       `json:"owner"`
	Host         string       `json:"host"`
	PID          int          `json:"pid"`
	Version      string       `json:"version"`
	StartedAt    *string      `json:"startedAt"`
	HeartbeatAt  *string      `json:"heartbeatAt"`
	HeartbeatAge string       `json:"heartbeatAge"`
	Live         bool         `json:"live"`
	ClockOffset  string       `json:"clockOffset"`
	Timers       bool         `json:"timers"`
	Jobs         []ReplicaJob `json:"jobs"`
}

// ReplicaList is GET /api/admin/cron/replicas's answer: the replicas, the
// database clock they were judged by, the bound used, and the replica
// running the absence checks ("monitor", null when none ever has).
type ReplicaList struct {
	Now      *string       `json:"now"`
	LiveFor  string        `json:"liveFor"`
	Replicas []Replica     `json:"replicas"`
	Monitor  *MonitorState `json:"monitor"`
}

// MonitorState is the lease of the absence checks: who runs them, and when
// they last ran (the lease's last renewal). "active" is false when the
// lease expired: no replica runs the checks now.
type MonitorState struct {
	Holder     string  `json:"holder"`
	Generation int64   `json:"generation"`
	LastPassAt *string `json:"lastPassAt"`
	ExpiresAt  *string `json:"expiresAt"`
	Active     bool    `json:"active"`
}

// Live counts the live replicas.
func (l ReplicaList) Live() int {
	n := 0
	for _, r := range l.Replicas {
		if r.Live {
			n++
		}
	}
	return n
}

// ReplicaOf is the API view of a replica row, judged live against now (the
// database clock).
func ReplicaOf(r store.Replica, now time.Time, liveFor time.Duration) Replica {
	age := now.Sub(r.HeartbeatAt)
	v := Replica{
		Owner: r.Owner, Host: r.Host, PID: r.PID, Version: r.Version,
		StartedAt: timeOrNil(r.StartedAt), HeartbeatAt: timeOrNil(r.HeartbeatAt),
		HeartbeatAge: age.Round(time.Millisecond).String(), Live: !r.HeartbeatAt.IsZero() && age <= liveFor,
		ClockOffset: r.ClockOffset.String(), Timers: r.Timers, Jobs: make([]ReplicaJob, 0, len(r.Jobs)),
	}
	for _, j := range r.Jobs {
		v.Jobs = append(v.Jobs, ReplicaJob{
			Name: j.Name, Schedule: j.Schedule, TimeZone: j.TimeZone, Timeout: j.Timeout.String(),
			LeaseTTL: j.LeaseTTL.String(), CatchUpWindow: j.CatchUpWindow.String(), Overlap: j.Overlap,
			Deadline: j.Deadline.String(), MaxAttempts: j.MaxAttempts, Disabled: j.Disabled, Hash: j.Hash,
		})
	}
	return v
}

// Alerts lists alerts from st, newest first.
func Alerts(ctx context.Context, st store.Store, p store.AlertListParams) ([]Alert, error) {
	rows, err := st.AlertList(ctx, p)
	if err != nil {
		return nil, err
	}
	out := make([]Alert, 0, len(rows))
	for _, a := range rows {
		out = append(out, AlertOf(a))
	}
	return out, nil
}

// Replicas reads the replica registry from st and judges each replica live
// against the database clock. On failure it names the operation that
// failed.
func Replicas(ctx context.Context, st store.Store, liveFor time.Duration) (ReplicaList, string, error) {
	now, err := st.Now(ctx)
	if err != nil {
		return ReplicaList{}, "read the database clock", err
	}
	return ReplicasAt(ctx, st, liveFor, now)
}

// ReplicasAt is Replicas judging liveness against now, a database clock
// reading the caller already made (the dashboard reads it once per page).
func ReplicasAt(ctx context.Context, st store.Store, liveFor time.Duration, now time.Time) (ReplicaList, string, error) {
	rows, err := st.ReplicaList(ctx)
	if err != nil {
		return ReplicaList{}, "list replicas", err
	}
	l := ReplicaList{Now: timeOrNil(now), LiveFor: liveFor.String(), Replicas: make([]Replica, 0, len(rows))}
	for _, r := range rows {
		l.Replicas = append(l.Replicas, ReplicaOf(r, now, liveFor))
	}
	ml, err := st.LeaseGet(ctx, cronfence.MonitorLeaseName)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return ReplicaList{}, "read the monitor lease", err
	default:
		last := ml.RenewedAt
		if ml.AcquiredAt.After(last) {
			last = ml.AcquiredAt
		}
		l.Monitor = &MonitorState{Holder: ml.Owner, Generation: ml.Generation, LastPassAt: timeOrNil(last),
			ExpiresAt: timeOrNil(ml.ExpiresAt), Active: ml.ExpiresAt.After(now)}
	}
	return l, "", nil
}

// monitorError answers a failure of Alerts or Replicas.
func (a *api) monitorError(w http.ResponseWriter, r *http.Request, op string, err error) {
	a.storeError(w, r, op, err)
}

// queryLimit parses ?limit= (1 to max, def when absent); it answers 400
// itself and returns false on a bad value.
func queryLimit(w http.ResponseWriter, r *http.Request, def, max int) (int, bool) {
	q := r.URL.Query()
	if !q.Has("limit") {
		return def, true
	}
	n, err := strconv.Atoi(q.Get("limit"))
	if err != nil || n < 1 || n > max {
		writeError(w, http.StatusBadRequest, "INVALID_LIMIT",
			fmt.Sprintf("limit must be an integer from 1 to %d, got %q", max, q.Get("limit")), nil)
		return 0, false
	}
	return n, true
}

// alerts answers GET /api/admin/cron/alerts: ?open=true for open alerts
// only, ?kind= and ?subject= to filter, ?limit=.
func (a *api) alerts(w http.ResponseWriter, r *http.Request) {
	limit, ok := queryLimit(w, r, DefaultAlertsLimit, MaxAlertsLimit)
	if !ok {
		return
	}
	q := r.URL.Query()
	p := store.AlertListParams{Limit: limit, Kind: store.AlertKind(q.Get("kind")), Subject: q.Get("subject")}
	if q.Has("open") {
		open, err := strconv.ParseBool(q.Get("open"))
		if err != nil {
			writeError(w, http.StatusBadRequest, "INVALID_PARAMETER", fmt.Sprintf("open must be true or false, got %q", q.Get("open")), nil)
			return
		}
		p.OpenOnly = open
	}
	list, err := Alerts(r.Context(), a.sched.Store(), p)
	if err != nil {
		a.monitorError(w, r, "list alerts", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"alerts": list})
}

// alertAckBody is the body of POST …/alerts/{kind}/{subject}/ack; it may
// be left out.
type alertAckBody struct {
	Note string `json:"note"`
	// AlertID, when not zero, is the open alert the caller saw: a later
	// one of the same kind and subject is not acknowledged in its place.
	AlertID int64 `json:"alertId"`
}

// alertAck answers POST /api/admin/cron/alerts/{kind}/{subject}/ack: the
// open alert of (kind, subject), acknowledged by the token's holder, or
// 404 ALERT_NOT_FOUND when there is none (never raised, resolved, or not
// the alertId given).
func (a *api) alertAck(w http.ResponseWriter, r *http.Request, by, kind, subject string) {
	var body alertAckBody
	if r.ContentLength != 0 && !a.decodeBody(w, r, &body) {
		return
	}
	p := store.AlertAcknowledgeParams{Kind: store.AlertKind(kind), Subject: subject, ID: body.AlertID, By: by, Note: body.Note}
	al, err := a.sched.Store().AlertAcknowledge(r.Context(), p)
	switch {
	case errors.Is(err, store.ErrNotFound):
		what := fmt.Sprintf("no open alert %s of %q", kind, subject)
		if body.AlertID != 0 {
			what += fmt.Sprintf(" with id %d", body.AlertID)
		}
		writeError(w, http.StatusNotFound, "ALERT_NOT_FOUND", what+" (resolved, or never raised)",
			map[string]any{"kind": kind, "subject": subject, "alertId": body.AlertID})
	case err != nil:
		a.storeError(w, r, "acknowledge the alert", err)
	default:
		writeJSON(w, http.StatusOK, AlertOf(al))
	}
}

// replicas answers GET /api/admin/cron/replicas.
func (a *api) replicas(w http.ResponseWriter, r *http.Request) {
	l, op, err := Replicas(r.Context(), a.sched.Store(), a.liveFor)
	if err != nil {
		a.monitorError(w, r, op, err)
		return
	}
	writeJSON(w, http.StatusOK, l)
}
