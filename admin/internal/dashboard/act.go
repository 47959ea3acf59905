package dashboard

import (
	"bytes"
	"crypto/hmac"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/admin/internal/adminapi"
)

// The buttons: one sign-in. A page rendered for an admin carries an action
// key, signed with the secret of the token that opened it; the page's
// script posts each action with that key to /act, and the dashboard hands
// it to the REST API as that token's. The browser's Basic credentials
// authorise nothing here: another site can make a browser send those (a
// form posted to /act), but it can neither read the key out of the page
// (the same-origin policy) nor send the header /act requires (a form
// cannot, and a script of another origin could only after a CORS
// preflight this server never grants).

// actionHeader must be on every /act request.
const actionHeader = "X-Cronfence-Action"

// actionKeyFor is how long an action key is good for: a page refreshes
// itself every 10 seconds, with a new key each time, so this only bounds
// how long a key copied out of a page stays usable.
const actionKeyFor = 12 * time.Hour

// maxActBody bounds /act's body: a job name (or an alert's kind and
// subject), an action, a note of at most 1,000 characters and the key;
// or a stored schedule's settings, as large as the API takes them.
const maxActBody = adminapi.MinScheduleBodyBytes + 8<<10

func actionMessage(name string, expires int64) []byte {
	return []byte("cronfence dashboard action\x00" + name + "\x00" + strconv.FormatInt(expires, 10))
}

// actionKey signs an action key for the token named name, good until
// now + actionKeyFor; empty when the token is not an admin's.
func (d *dashboard) actionKey(id adminapi.Identity, now time.Time) string {
	if id.Role != adminapi.RoleAdmin {
		return ""
	}
	expires := now.Add(actionKeyFor).Unix()
	mac, _, ok := d.tokens.Sign(id.Name, actionMessage(id.Name, expires))
	if !ok {
		return ""
	}
	enc := base64.RawURLEncoding
	return "v1." + enc.EncodeToString([]byte(id.Name)) + "." + strconv.FormatInt(expires, 10) + "." + enc.EncodeToString(mac)
}

// checkActionKey returns the identity an action key was signed for, if it
// is genuine and has not expired by now.
func (d *dashboard) checkActionKey(key string, now time.Time) (adminapi.Identity, error) {
	parts := strings.Split(key, ".")
	// Strict: one spelling per key, so no two strings pass as one key.
	enc := base64.RawURLEncoding.Strict()
	if len(parts) != 4 || parts[0] != "v1" {
		return adminapi.Identity{}, errors.New("the action key is malformed: reload the page")
	}
	name, err1 := enc.DecodeString(parts[1])
	expires, err2 := strconv.ParseInt(parts[2], 10, 64)
	mac, err3 := enc.DecodeString(parts[3])
	if err1 != nil || err2 != nil || err3 != nil {
		return adminapi.Identity{}, errors.New("the action key is malformed: reload the page")
	}
	want, id, ok := d.tokens.Sign(string(name), actionMessage(string(name), expires))
	if !ok || !hmac.Equal(mac, want) {
		return adminapi.Identity{}, errors.New("the action key is not valid (the token that opened the page was changed or removed): reload the page")
	}
	if now.Unix() > expires {
		return adminapi.Identity{}, errors.New("the action key has expired: reload the page")
	}
	return id, nil
}

// sameOrigin reports whether r comes from a page of this origin, as far
// as the browser says: Sec-Fetch-Site and Origin, when it sends them,
// must name this origin. (Without either, the header /act requires and
// its JSON body still keep other sites out.)
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return false
		}
	}
	return true
}

type actBody struct {
	Job    string `json:"job"`    // or the stored schedule's name
	Action string `json:"action"` // pause, resume, unset, trigger, acknowledge, backfill-create, backfill-cancel, or schedule-create, -update, -delete
	Note   string `json:"note"`
	Key    string `json:"key"`
	// Until, with pause, ends the pause by itself at that instant (RFC
	// 3339); empty: until changed.
	Until string `json:"until"`
	// Kind, Subject and AlertID name the alert to acknowledge: the open
	// alert the page showed, not a later one of the same kind and subject.
	Kind    string `json:"kind"`
	Subject string `json:"subject"`
	AlertID int64  `json:"alertId"`
	// Schedule is the body of a schedule's create or update, as the API
	// takes it (client.ScheduleCreate, client.ScheduleUpdate); Version
	// the version a delete was asked of.
	Schedule json.RawMessage `json:"schedule"`
	Version  int64           `json:"version"`
	// BackfillID names the backfill of Job a backfill-cancel cancels.
	BackfillID int64 `json:"backfillId"`
	// Backfill is the body of a backfill-create of Job, as the API takes
	// it (client.BackfillCreate; with dryRun, the plan only).
	Backfill json.RawMessage `json:"backfill"`
}

func actError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"code": code, "message": msg})
}

// act is POST /act: checks where the request comes from and its key, then
// hands the action to the REST API as the key's token.
func (d *dashboard) act(w http.ResponseWriter, r *http.Request) {
	if d.api == nil {
		actError(w, http.StatusNotFound, "NOT_FOUND", "this dashboard has no API to act through")
		return
	}
	if r.Header.Get(actionHeader) != "1" || !sameOrigin(r) {
		actError(w, http.StatusForbidden, "CROSS_SITE", "actions are taken from the dashboard's own pages only")
		return
	}
	var body actBody
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxActBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		actError(w, http.StatusBadRequest, "MALFORMED_BODY", "malformed action: "+err.Error())
		return
	}
	id, err := d.checkActionKey(body.Key, time.Now())
	if err != nil {
		actError(w, http.StatusForbidden, "BAD_ACTION_KEY", err.Error())
		return
	}
	path := client.JobPath(body.Job)
	method, payload := http.MethodPut, map[string]any{"note": body.Note}
	switch body.Action {
	case "pause":
		payload["enabled"] = false
		if body.Until != "" {
			payload["until"] = body.Until
		}
	case "resume":
		payload["enabled"] = true
	case "unset":
		payload["enabled"] = nil
	case "trigger":
		method, path, payload = http.MethodPost, path+"/run", nil
	case "acknowledge":
		method, path = http.MethodPost, client.AlertAckPath(body.Kind, body.Subject)
		payload["alertId"] = body.AlertID
	case "backfill-cancel":
		// The API cancels it as the key's token (the cancel's "by"), and
		// answers 409 BACKFILL_ENDED for one that had ended.
		if body.BackfillID < 1 {
			actError(w, http.StatusBadRequest, "MALFORMED_BODY", "backfill-cancel needs the backfill's ID (backfillId)")
			return
		}
		method, path, payload = http.MethodDelete, client.BackfillPath(body.Job, body.BackfillID), nil
	case "backfill-create":
		if len(body.Backfill) == 0 {
			actError(w, http.StatusBadRequest, "MALFORMED_BODY", "backfill-create needs the backfill's settings (backfill)")
			return
		}
		d.toAPI(w, r, id, http.MethodPost, client.BackfillsPath(body.Job), bytes.NewReader(body.Backfill), true)
		return
	case "schedule-create", "schedule-update", "schedule-delete":
		d.actSchedule(w, r, id, body)
		return
	default:
		actError(w, http.StatusBadRequest, "MALFORMED_BODY", "action must be pause, resume, unset, trigger, acknowledge, backfill-create, backfill-cancel or schedule-create, -update, -delete, got "+strconv.Quote(body.Action))
		return
	}
	var buf bytes.Buffer
	if payload != nil {
		_ = json.NewEncoder(&buf).Encode(payload)
	}
	d.toAPI(w, r, id, method, path, &buf, payload != nil)
}

// actSchedule hands a stored schedule's create, update or delete to the
// REST API, which checks it as any client's.
func (d *dashboard) actSchedule(w http.ResponseWriter, r *http.Request, id adminapi.Identity, body actBody) {
	switch body.Action {
	case "schedule-create":
		d.toAPI(w, r, id, http.MethodPost, client.SchedulesPath, bytes.NewReader(body.Schedule), true)
	case "schedule-update":
		d.toAPI(w, r, id, http.MethodPut, client.SchedulePath(body.Job), bytes.NewReader(body.Schedule), true)
	default:
		path := client.SchedulePath(body.Job)
		if body.Version != 0 {
			path += "?version=" + strconv.FormatInt(body.Version, 10)
		}
		d.toAPI(w, r, id, http.MethodDelete, path, nil, false)
	}
}

// toAPI sends one request to the REST API as id, its answer the action's.
func (d *dashboard) toAPI(w http.ResponseWriter, r *http.Request, id adminapi.Identity, method, path string, buf io.Reader, isJSON bool) {
	req, err := http.NewRequestWithContext(adminapi.WithIdentity(r.Context(), id), method, path, buf)
	if err != nil {
		actError(w, http.StatusBadRequest, "MALFORMED_BODY", err.Error())
		return
	}
	if isJSON {
		req.Header.Set("Content-Type", "application/json")
	}
	d.api.ServeHTTP(w, req)
}
