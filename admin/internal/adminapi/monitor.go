package adminapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/internal/adminview"
	"github.com/cronfence/cronfence/store"
)

// DefaultReplicaLiveFor is Options.ReplicaLiveFor's default: a replica
// whose last heartbeat is older than this, by the database clock, is not
// live. Three heartbeat periods, as the absence checks' default
// (cronfence.AlertThresholds.ReplicaStale), so the API, the dashboard and
// the checks agree on which replicas are live, and one slow round trip does
// not flap it.
const DefaultReplicaLiveFor = 3 * cronfence.DefaultHeartbeatEvery

// monitorError answers a failure of adminview.Alerts or adminview.Replicas.
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
	limit, ok := queryLimit(w, r, client.DefaultAlertsLimit, client.MaxAlertsLimit)
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
	list, err := adminview.Alerts(r.Context(), a.sched.Store(), p)
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
		writeJSON(w, http.StatusOK, adminview.AlertOf(al))
	}
}

// replicas answers GET /api/admin/cron/replicas.
func (a *api) replicas(w http.ResponseWriter, r *http.Request) {
	l, op, err := adminview.Replicas(r.Context(), a.sched.Store(), cronfence.MonitorLeaseName, a.liveFor)
	if err != nil {
		a.monitorError(w, r, op, err)
		return
	}
	writeJSON(w, http.StatusOK, l)
}
