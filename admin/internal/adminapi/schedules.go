package adminapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/internal/adminview"
	"github.com/cronfence/cronfence/store"
)

// The stored schedules' endpoints (see doc.go):
//
//	GET    /api/admin/cron/schedules                 ?after=NAME&limit=N: a page, in name order
//	POST   /api/admin/cron/schedules                 create: 201 with the schedule
//	GET    /api/admin/cron/schedules/{name}          one
//	PUT    /api/admin/cron/schedules/{name}          update; the body's "version" is the one read
//	DELETE /api/admin/cron/schedules/{name}          ?version=N (any when left out)
//	GET    /api/admin/cron/schedules/{name}/audit    ?before=SEQ&limit=N: its changes, newest first
//	GET    /api/admin/cron/schedules-audit           every schedule's changes
const (
	schedulesSegment      = "schedules"
	schedulesAuditSegment = "schedules-audit"
)

// ShellKind is the kind whose arguments carry a raw shell command
// ({"command": "…"}), which the cronfence binary registers when its
// config says schedules: {allow_shell: true}. Only an admin token may
// create or change a schedule of this kind, whatever role may write
// others.
const ShellKind = "shell"

// MinScheduleBodyBytes is the least a schedule's create or update body
// may be, whatever Options.MaxBodyBytes: arguments of the most a
// schedule may have (store.MaxScheduleArgsBytes), escaped, and the rest.
const MinScheduleBodyBytes = 2*store.MaxScheduleArgsBytes + 16<<10

// decodeSchedule decodes a schedule's create or update body.
func (a *api) decodeSchedule(w http.ResponseWriter, r *http.Request, v any) bool {
	return a.decodeBodyUpTo(w, r, v, max(a.maxBody, MinScheduleBodyBytes))
}

// matchSchedules routes a path whose first segment is the literal
// "schedules".
func matchSchedules(parts []string) (route, bool) {
	switch {
	case len(parts) == 1 || (len(parts) == 2 && parts[1] == ""):
		return route{kind: "schedules", allow: "GET, HEAD, POST"}, true
	case len(parts) > 3 || (len(parts) == 3 && parts[2] != "audit"):
		return route{}, false
	}
	name, err := url.PathUnescape(parts[1])
	if err != nil || name == "" {
		return route{}, false
	}
	if len(parts) == 3 {
		return route{kind: "scheduleAudit", job: name, allow: "GET, HEAD"}, true
	}
	return route{kind: "schedule", job: name, allow: "GET, HEAD, PUT, DELETE"}, true
}

// serveSchedules answers the stored schedules' routes; writes are by tok.
func (a *api) serveSchedules(w http.ResponseWriter, r *http.Request, tok Identity, rt route) {
	switch {
	case rt.kind == "schedules" && r.Method == http.MethodPost:
		a.createSchedule(w, r, tok)
	case rt.kind == "schedules":
		a.listSchedules(w, r)
	case rt.kind == "schedule" && r.Method == http.MethodPut:
		a.updateSchedule(w, r, tok, rt.job)
	case rt.kind == "schedule" && r.Method == http.MethodDelete:
		a.deleteSchedule(w, r, tok, rt.job)
	case rt.kind == "schedule":
		a.getSchedule(w, r, rt.job)
	case rt.kind == "scheduleAudit":
		a.scheduleAudit(w, r, rt.job)
	case rt.kind == "schedulesAudit":
		a.scheduleAudit(w, r, "")
	}
}

func (a *api) listSchedules(w http.ResponseWriter, r *http.Request) {
	limit, ok := queryLimit(w, r, client.DefaultSchedulesLimit, client.MaxSchedulesLimit)
	if !ok {
		return
	}
	list, err := a.sched.Schedules().List(r.Context(), r.URL.Query().Get("after"), limit)
	if err != nil {
		a.scheduleError(w, r, "list the schedules", "", err)
		return
	}
	page := client.SchedulePage{Schedules: make([]client.Schedule, 0, len(list))}
	for _, sc := range list {
		page.Schedules = append(page.Schedules, adminview.ScheduleOf(sc))
	}
	if len(list) == limit {
		next := list[len(list)-1].Name
		page.Next = &next
	}
	writeJSON(w, http.StatusOK, page)
}

func (a *api) getSchedule(w http.ResponseWriter, r *http.Request, name string) {
	sc, err := a.sched.Schedules().Get(r.Context(), name)
	if err != nil {
		a.scheduleError(w, r, "read the schedule", name, err)
		return
	}
	writeJSON(w, http.StatusOK, adminview.ScheduleOf(sc))
}

func (a *api) createSchedule(w http.ResponseWriter, r *http.Request, tok Identity) {
	var body client.ScheduleCreate
	if !a.decodeSchedule(w, r, &body) {
		return
	}
	set, ok := a.settings(w, tok, body.ScheduleSettings)
	if !ok {
		return
	}
	sc, err := a.sched.Schedules().Create(r.Context(), body.Name, set, tok.Name)
	if err != nil {
		a.scheduleError(w, r, "create the schedule", body.Name, err)
		return
	}
	// Relative to this request's path (…/schedules), so it holds under
	// whatever prefix the API is mounted at.
	w.Header().Set("Location", schedulesSegment+"/"+url.PathEscape(sc.Name))
	writeJSON(w, http.StatusCreated, adminview.ScheduleOf(sc))
}

func (a *api) updateSchedule(w http.ResponseWriter, r *http.Request, tok Identity, name string) {
	var body client.ScheduleUpdate
	if !a.decodeSchedule(w, r, &body) {
		return
	}
	if body.Version < 1 {
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT",
			fmt.Sprintf("version: the version read (GET the schedule) is required, at least 1, got %d", body.Version), map[string]string{"field": "version"})
		return
	}
	set, ok := a.settings(w, tok, body.ScheduleSettings)
	if !ok {
		return
	}
	sc, err := a.sched.Schedules().Update(r.Context(), name, body.Version, set, tok.Name)
	if err != nil {
		a.scheduleError(w, r, "update the schedule", name, err)
		return
	}
	writeJSON(w, http.StatusOK, adminview.ScheduleOf(sc))
}

func (a *api) deleteSchedule(w http.ResponseWriter, r *http.Request, tok Identity, name string) {
	var version int64
	if q := r.URL.Query(); q.Has("version") {
		v, err := strconv.ParseInt(q.Get("version"), 10, 64)
		if err != nil || v < 1 {
			writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT",
				fmt.Sprintf("version: must be the version read, at least 1 (leave it out for any), got %q", q.Get("version")), map[string]string{"field": "version"})
			return
		}
		version = v
	}
	sc, err := a.sched.Schedules().Delete(r.Context(), name, version, tok.Name)
	if err != nil {
		a.scheduleError(w, r, "delete the schedule", name, err)
		return
	}
	writeJSON(w, http.StatusOK, adminview.ScheduleOf(sc))
}

// scheduleAudit answers the changes of the schedule name, of every
// schedule when "". A deleted schedule keeps its changes: no 404.
func (a *api) scheduleAudit(w http.ResponseWriter, r *http.Request, name string) {
	limit, ok := queryLimit(w, r, client.DefaultSchedulesLimit, client.MaxSchedulesLimit)
	if !ok {
		return
	}
	var before int64
	if q := r.URL.Query(); q.Has("before") {
		v, err := strconv.ParseInt(q.Get("before"), 10, 64)
		if err != nil || v < 1 {
			writeError(w, http.StatusBadRequest, "INVALID_PARAMETER", fmt.Sprintf("before must be a sequence number, at least 1, got %q", q.Get("before")), nil)
			return
		}
		before = v
	}
	changes, err := a.sched.Schedules().Audit(r.Context(), name, before, limit)
	if err != nil {
		a.scheduleError(w, r, "read the schedules' audit", name, err)
		return
	}
	out := client.ScheduleAudit{Changes: make([]client.ScheduleChange, 0, len(changes))}
	for _, ch := range changes {
		out.Changes = append(out.Changes, adminview.ChangeOf(ch))
	}
	if len(changes) == limit {
		next := changes[len(changes)-1].Seq
		out.Next = &next
	}
	writeJSON(w, http.StatusOK, out)
}

// settings reads a request's settings, answering 400 naming the field
// for a bad one, and 403 for a shell schedule written by a token that
// is not an admin's.
func (a *api) settings(w http.ResponseWriter, tok Identity, v client.ScheduleSettings) (store.ScheduleSettings, bool) {
	set, err := adminview.Settings(v)
	if err != nil {
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", err.Error(), nil)
		return set, false
	}
	if set.Kind != ShellKind {
		return set, true
	}
	if tok.Role != RoleAdmin {
		writeError(w, http.StatusForbidden, "FORBIDDEN", "token "+tok.Name+" may not write a schedule of kind shell (a raw command); that needs an admin token", nil)
		return set, false
	}
	var args struct {
		Command string `json:"command"`
	}
	dec := json.NewDecoder(bytes.NewReader(set.Args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&args); err != nil || strings.TrimSpace(args.Command) == "" {
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", `args: a schedule of kind shell takes {"command": "…"}, a command that is not empty, and nothing else`, map[string]string{"field": "args"})
		return set, false
	}
	return set, true
}

// scheduleError answers a failure of the stored schedules' API: 404 for
// an unknown schedule, 409 with the current version for a conflict, 400
// for bad input, 503 for a store that did not answer (nothing written).
func (a *api) scheduleError(w http.ResponseWriter, r *http.Request, op, name string, err error) {
	var conflict *store.ConflictError
	switch {
	case errors.Is(err, cronfence.ErrUnknownSchedule):
		writeError(w, http.StatusNotFound, "SCHEDULE_NOT_FOUND", fmt.Sprintf("no stored schedule named %q", name), map[string]string{"name": name})
	case errors.As(err, &conflict):
		msg := fmt.Sprintf("schedule %q is at version %d, not %d: read it again and retry", conflict.Name, conflict.Current, conflict.Version)
		if conflict.Version == 0 {
			msg = fmt.Sprintf("a schedule named %q exists (version %d)", conflict.Name, conflict.Current)
		}
		writeError(w, http.StatusConflict, "SCHEDULE_CONFLICT", msg,
			client.ScheduleConflict{Name: conflict.Name, Version: conflict.Version, CurrentVersion: conflict.Current})
	case errors.Is(err, cronfence.ErrScheduleConflict):
		writeError(w, http.StatusConflict, "SCHEDULE_CONFLICT", err.Error(), nil)
	case errors.Is(err, store.ErrInvalidArgument):
		// The scheduler's errors join the sentinel on a line of its own.
		msg := strings.ReplaceAll(strings.TrimSuffix(err.Error(), "\n"+store.ErrInvalidArgument.Error()), "\n", ": ")
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", msg, nil)
	default:
		a.storeError(w, r, op, err)
	}
}
