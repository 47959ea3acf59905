package dashboard

import (
	"net/http"
	"strconv"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/internal/adminapi"
	"github.com/cronfence/cronfence/store"
)

// Chrome is what every page's header shows.
type Chrome struct {
	Title string
	Who   string // the token's name
	Admin bool   // the token may write (the buttons still need a typed bearer token)
	Now   stamp  // the database clock
}

type overrideView struct {
	State string // "paused", "enabled" or "removed"
	By    string
	At    stamp
	Note  string
}

type leaseView struct {
	Holder     string
	Generation int64
	Active     bool
	Acquired   stamp
	Expires    stamp
	Age        string // how long the current holder has held it
}

type runView struct {
	ID         int64
	Started    stamp
	Finished   stamp
	Slot       stamp
	Kind       string // "scheduled", "manual", "catch-up"
	Owner      string
	Generation int64
	Attempt    int
	Duration   string
	Outcome    string // "ok", "failed", "skipped", "running"
	Detail     string // the error or the skip reason
	Logs       []string
}

type jobView struct {
	Name            string
	Schedule        string
	Zone            string
	Overlap         string
	Next            stamp
	Enabled         bool
	DeclaredEnabled bool
	Override        *overrideView
	LastRun         *runView
	Lease           *leaseView
}

type alertView struct {
	ID       int64
	Kind     string
	Subject  string
	IsJob    bool // Subject is a registered job: link it
	Message  string
	Details  map[string]string
	RaisedBy string
	Raised   stamp
	LastSeen stamp
	Resolved stamp
	Open     bool
}

type replicaView struct {
	adminapi.Replica
	Started   stamp
	Heartbeat stamp
}

// MonitorView is the alerts and replicas of a page.
type MonitorView struct {
	Alerts   []alertView
	Replicas []replicaView
	LiveFor  string
	Checks   *checksView // nil: no replica ever ran the absence checks
}

// checksView is who runs the absence checks and when they last ran.
type checksView struct {
	Holder   string
	LastPass stamp
	Active   bool
}

type overviewPage struct {
	Chrome
	Jobs []jobView
	MonitorView
}

type jobPage struct {
	Chrome
	Job        jobView
	Runs       []runView
	Limit      int
	Registered []replicaJob // the live replicas that register the job, with their settings
	MonitorView
}

type replicaJob struct {
	Owner string
	Hash  string
	Drift bool // differs from the first replica's hash
}

type alertsPage struct {
	Chrome
	Alerts []alertView
	Limit  int
}

func (d *dashboard) chromeFor(title string, id adminapi.Identity, now time.Time) Chrome {
	return Chrome{Title: title, Who: id.Name, Admin: id.Role == adminapi.RoleAdmin, Now: at(now, time.UTC, time.Time{})}
}

func runOf(r adminapi.Run, loc *time.Location, now time.Time) runView {
	v := runView{
		ID: r.ID, Started: parseAt(r.StartedAt, loc, now), Finished: parseAt(r.FinishedAt, loc, now),
		Slot: parseAt(r.Slot, loc, time.Time{}), Kind: "scheduled", Owner: r.Owner, Generation: r.Generation,
		Attempt: r.Attempt, Logs: r.Logs,
	}
	switch {
	case r.Manual:
		v.Kind = "manual"
	case r.CatchUp:
		v.Kind = "catch-up"
	}
	if s, f := parseTime(r.StartedAt), parseTime(r.FinishedAt); !s.IsZero() && !f.IsZero() && !r.Result.Skipped {
		v.Duration = duration(f.Sub(s))
	}
	switch {
	case r.Result.Skipped:
		v.Outcome, v.Detail = "skipped", r.Result.Reason
	case r.FinishedAt == nil && r.Error == nil && !r.Success:
		v.Outcome = "running"
	case r.Success:
		v.Outcome = "ok"
	default:
		v.Outcome = "failed"
		if r.Error != nil {
			v.Detail = *r.Error
		}
	}
	return v
}

func jobOf(j adminapi.Job, now time.Time) jobView {
	loc := zone(j.TimeZone)
	v := jobView{
		Name: j.Name, Schedule: j.Schedule, Zone: j.TimeZone, Overlap: j.Overlap, Next: parseAt(j.Next, loc, now),
		Enabled: j.Enabled, DeclaredEnabled: j.DeclaredEnabled,
	}
	if o := j.Override; o != nil {
		ov := &overrideView{State: "removed", By: o.By, At: parseAt(o.At, loc, now), Note: o.Note}
		if o.Enabled != nil {
			ov.State = "paused"
			if *o.Enabled {
				ov.State = "enabled"
			}
		}
		v.Override = ov
	}
	if j.LastRun != nil {
		r := runOf(*j.LastRun, loc, now)
		v.LastRun = &r
	}
	if l := j.Lease; l != nil {
		lv := &leaseView{Holder: l.Holder, Generation: l.Generation, Active: l.Active,
			Acquired: parseAt(l.AcquiredAt, loc, now), Expires: parseAt(l.ExpiresAt, loc, now)}
		if a := parseTime(l.AcquiredAt); l.Active && !a.IsZero() {
			lv.Age = duration(now.Sub(a).Round(time.Second))
		}
		v.Lease = lv
	}
	return v
}

func (d *dashboard) alertViews(list []adminapi.Alert, now time.Time) []alertView {
	jobs := map[string]string{} // name → zone
	for _, info := range d.sched.Jobs() {
		jobs[info.Job.Name] = info.Job.TimeZone
	}
	out := make([]alertView, 0, len(list))
	for _, a := range list {
		tz, isJob := jobs[a.Subject]
		loc := zone(tz)
		out = append(out, alertView{
			ID: a.ID, Kind: a.Kind, Subject: a.Subject, IsJob: isJob, Message: a.Message, Details: a.Details,
			RaisedBy: a.RaisedBy, Raised: parseAt(a.RaisedAt, loc, now), LastSeen: parseAt(a.LastSeenAt, loc, now),
			Resolved: parseAt(a.ResolvedAt, loc, now), Open: a.Open,
		})
	}
	return out
}

// monitor reads open alerts (of subject, when not empty) and replicas; op
// names a failed read.
func (d *dashboard) monitor(r *http.Request, subject string, now time.Time) (MonitorView, string, error) {
	st := d.sched.Store()
	alerts, err := adminapi.Alerts(r.Context(), st, store.AlertListParams{OpenOnly: true, Subject: subject, Limit: adminapi.MaxAlertsLimit})
	if err != nil {
		return MonitorView{}, "list alerts", err
	}
	reps, op, err := adminapi.ReplicasAt(r.Context(), st, d.liveFor, now)
	if err != nil {
		return MonitorView{}, op, err
	}
	mv := MonitorView{Alerts: d.alertViews(alerts, now), LiveFor: d.liveFor.String()}
	if m := reps.Monitor; m != nil {
		mv.Checks = &checksView{Holder: m.Holder, LastPass: parseAt(m.LastPassAt, time.UTC, now), Active: m.Active}
	}
	for _, rep := range reps.Replicas {
		mv.Replicas = append(mv.Replicas, replicaView{Replica: rep,
			Started: parseAt(rep.StartedAt, time.UTC, now), Heartbeat: parseAt(rep.HeartbeatAt, time.UTC, now)})
	}
	return mv, "", nil
}

func (d *dashboard) overview(w http.ResponseWriter, r *http.Request, id adminapi.Identity) {
	st := d.sched.Store()
	now, err := st.Now(r.Context())
	if err != nil {
		d.storeError(w, r, "read the database clock", err)
		return
	}
	jobs, op, err := adminapi.JobsAt(r.Context(), st, d.sched.Jobs(), now)
	if err != nil {
		d.storeError(w, r, op, err)
		return
	}
	mv, op, err := d.monitor(r, "", now)
	if err != nil {
		d.storeError(w, r, op, err)
		return
	}
	p := overviewPage{Chrome: d.chromeFor("Jobs", id, now), MonitorView: mv}
	for _, j := range jobs {
		p.Jobs = append(p.Jobs, jobOf(j, now))
	}
	d.render(w, http.StatusOK, "overview.html", p)
}

// queryLimit reads ?limit= between 1 and max, def when absent or invalid.
func queryLimit(r *http.Request, def, max int) int {
	n, err := strconv.Atoi(r.URL.Query().Get("limit"))
	if err != nil || n < 1 {
		return def
	}
	return min(n, max)
}

func (d *dashboard) job(w http.ResponseWriter, r *http.Request, id adminapi.Identity) {
	name := r.URL.Query().Get("name")
	var info *cronfence.JobInfo
	for _, i := range d.sched.Jobs() {
		if i.Job.Name == name {
			info = &i
			break
		}
	}
	if info == nil {
		d.plain(w, http.StatusNotFound, "No job named "+strconv.Quote(name)+" is registered on this replica.")
		return
	}
	st := d.sched.Store()
	now, err := st.Now(r.Context())
	if err != nil {
		d.storeError(w, r, "read the database clock", err)
		return
	}
	jobs, op, err := adminapi.JobsAt(r.Context(), st, []cronfence.JobInfo{*info}, now)
	if err != nil {
		d.storeError(w, r, op, err)
		return
	}
	limit := queryLimit(r, DefaultRunsLimit, MaxRunsLimit)
	runs, err := st.RunList(r.Context(), store.RunListParams{Job: name, Limit: limit})
	if err != nil {
		d.storeError(w, r, "list runs", err)
		return
	}
	mv, op, err := d.monitor(r, name, now)
	if err != nil {
		d.storeError(w, r, op, err)
		return
	}
	p := jobPage{Chrome: d.chromeFor(name, id, now), Job: jobOf(jobs[0], now), Limit: limit, MonitorView: mv}
	loc := zone(jobs[0].TimeZone)
	for _, run := range runs {
		p.Runs = append(p.Runs, runOf(adminapi.RunOf(run), loc, now))
	}
	first := ""
	for _, rep := range mv.Replicas {
		if !rep.Live {
			continue
		}
		for _, j := range rep.Jobs {
			if j.Name != name {
				continue
			}
			if first == "" {
				first = j.Hash
			}
			p.Registered = append(p.Registered, replicaJob{Owner: rep.Owner, Hash: j.Hash, Drift: j.Hash != first})
		}
	}
	d.render(w, http.StatusOK, "job.html", p)
}

func (d *dashboard) alerts(w http.ResponseWriter, r *http.Request, id adminapi.Identity) {
	st := d.sched.Store()
	now, err := st.Now(r.Context())
	if err != nil {
		d.storeError(w, r, "read the database clock", err)
		return
	}
	limit := queryLimit(r, alertsPageLimit, adminapi.MaxAlertsLimit)
	p := alertsPage{Chrome: d.chromeFor("Alerts", id, now), Limit: limit}
	list, err := adminapi.Alerts(r.Context(), st, store.AlertListParams{Limit: limit})
	if err != nil {
		d.storeError(w, r, "list alerts", err)
		return
	}
	p.Alerts = d.alertViews(list, now)
	d.render(w, http.StatusOK, "alerts.html", p)
}
