package dashboard

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/admin/internal/adminapi"
	"github.com/cronfence/cronfence/internal/adminview"
)

// The stored schedules' pages: /schedules lists them, with the form that
// creates one and the latest changes; /schedule?name= shows one, with the
// form that edits it (carrying the version it was read at: a change made
// since is refused, and the message gives the current version), its
// delete button (asks to confirm) and its changes. The forms are sent
// by the page's script through /act, as the buttons are.

// schedulesPageLimit is how many schedules /schedules lists, and
// changesPageLimit how many changes a page lists.
const (
	schedulesPageLimit = 200
	changesPageLimit   = 50
)

type scheduleView struct {
	client.Schedule
	ArgsText    string // the arguments as JSON, "" for none
	ExcludeText string // the exclusion windows, one a line, "" for none
	Created     stamp
	Updated     stamp
}

type changeView struct {
	client.ScheduleChange
	At      stamp
	Summary string // what changed
}

type schedulesPage struct {
	Chrome
	Schedules []scheduleView
	More      bool // more schedules than listed
	Changes   []changeView
	Overlaps  []string
}

type schedulePage struct {
	Chrome
	Schedule scheduleView
	Changes  []changeView
	Overlaps []string
}

// overlaps are the choices of a form's overlap field.
var overlaps = []string{"skip", "allow", "buffer-one"}

// catchUps are the choices of a form's catch-up field besides the default.
var catchUps = []string{"none", "latest", "all"}

func scheduleViewOf(sc client.Schedule, now time.Time) scheduleView {
	v := scheduleView{Schedule: sc, Created: parseAt(sc.CreatedAt, time.UTC, now), Updated: parseAt(sc.UpdatedAt, time.UTC, now)}
	if len(sc.Args) > 0 && string(sc.Args) != "null" {
		v.ArgsText = string(sc.Args)
	}
	v.ExcludeText = strings.Join(sc.Exclude, "\n")
	return v
}

func changeViews(list []client.ScheduleChange, now time.Time) []changeView {
	out := make([]changeView, 0, len(list))
	for _, ch := range list {
		out = append(out, changeView{ScheduleChange: ch, At: parseAt(ch.At, time.UTC, now), Summary: changeSummary(ch)})
	}
	return out
}

// changeSummary says what a change did: the settings an update changed.
func changeSummary(ch client.ScheduleChange) string {
	switch {
	case ch.Before == nil && ch.After != nil:
		return "created: kind " + ch.After.Kind + ", " + ch.After.Spec
	case ch.After == nil:
		return "deleted"
	}
	b, a := *ch.Before, *ch.After
	s := ""
	add := func(name, from, to string) {
		if from != to {
			if s != "" {
				s += "; "
			}
			s += name + " " + from + " → " + to
		}
	}
	add("spec", b.Spec, a.Spec)
	add("zone", b.TimeZone, a.TimeZone)
	add("kind", b.Kind, a.Kind)
	add("args", string(b.Args), string(a.Args))
	add("overlap", b.Overlap, a.Overlap)
	add("timeout", b.Timeout, a.Timeout)
	add("lease TTL", b.LeaseTTL, a.LeaseTTL)
	add("catch-up", b.CatchUp, a.CatchUp)
	add("catch-up window", b.CatchUpWindow, a.CatchUpWindow)
	add("max catch-up", strconv.Itoa(b.MaxCatchUp), strconv.Itoa(a.MaxCatchUp))
	add("jitter", b.Jitter, a.Jitter)
	add("exclude", strings.Join(b.Exclude, ", "), strings.Join(a.Exclude, ", "))
	add("attempts", strconv.Itoa(b.MaxAttempts), strconv.Itoa(a.MaxAttempts))
	add("backoff", b.RetryBackoff, a.RetryBackoff)
	add("deadline", b.Deadline, a.Deadline)
	add("disabled", strconv.FormatBool(b.Disabled), strconv.FormatBool(a.Disabled))
	if s == "" {
		return "no setting changed"
	}
	return s
}

func (d *dashboard) schedules(w http.ResponseWriter, r *http.Request, id adminapi.Identity) {
	now, err := d.sched.Store().Now(r.Context())
	if err != nil {
		d.storeError(w, r, "read the database clock", err)
		return
	}
	ss := d.sched.Schedules()
	list, err := ss.List(r.Context(), "", schedulesPageLimit)
	if err != nil {
		d.storeError(w, r, "list the schedules", err)
		return
	}
	changes, err := ss.Audit(r.Context(), "", 0, changesPageLimit)
	if err != nil {
		d.storeError(w, r, "read the schedules' changes", err)
		return
	}
	p := schedulesPage{Chrome: d.chromeFor(r, "Schedules", id, now), More: len(list) == schedulesPageLimit, Overlaps: overlaps}
	// A form being filled in must not be reloaded away.
	p.Still = true
	for _, sc := range list {
		p.Schedules = append(p.Schedules, scheduleViewOf(adminview.ScheduleOf(sc), now))
	}
	views := make([]client.ScheduleChange, 0, len(changes))
	for _, ch := range changes {
		views = append(views, adminview.ChangeOf(ch))
	}
	p.Changes = changeViews(views, now)
	d.render(w, http.StatusOK, "schedules.html", p)
}

func (d *dashboard) schedule(w http.ResponseWriter, r *http.Request, id adminapi.Identity) {
	name := r.URL.Query().Get("name")
	now, err := d.sched.Store().Now(r.Context())
	if err != nil {
		d.storeError(w, r, "read the database clock", err)
		return
	}
	ss := d.sched.Schedules()
	sc, err := ss.Get(r.Context(), name)
	if errors.Is(err, cronfence.ErrUnknownSchedule) {
		d.plain(w, http.StatusNotFound, "No stored schedule is named "+strconv.Quote(name)+" (deleted, or never created).")
		return
	}
	if err != nil {
		d.storeError(w, r, "read the schedule", err)
		return
	}
	changes, err := ss.Audit(r.Context(), name, 0, changesPageLimit)
	if err != nil {
		d.storeError(w, r, "read the schedule's changes", err)
		return
	}
	p := schedulePage{Chrome: d.chromeFor(r, "Schedule "+name, id, now), Schedule: scheduleViewOf(adminview.ScheduleOf(sc), now), Overlaps: overlaps}
	p.Still = true
	views := make([]client.ScheduleChange, 0, len(changes))
	for _, ch := range changes {
		views = append(views, adminview.ChangeOf(ch))
	}
	p.Changes = changeViews(views, now)
	d.render(w, http.StatusOK, "schedule.html", p)
}

// scheduleForm is what the form template reads: create, or update the
// schedule sc.
type scheduleForm struct {
	Mode     string // "create" or "update"
	Overlaps []string
	CatchUps []string
	Schedule *scheduleView
}

// scheduleFormOf makes a form's data in a template: sc is a scheduleView,
// or nil for a create.
func scheduleFormOf(mode string, overlaps []string, sc any) scheduleForm {
	f := scheduleForm{Mode: mode, Overlaps: overlaps, CatchUps: catchUps}
	if v, ok := sc.(scheduleView); ok {
		f.Schedule = &v
	}
	return f
}
