package dashboard

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/admin/internal/adminapi"
	"github.com/cronfence/cronfence/internal/adminview"
	"github.com/cronfence/cronfence/store"
)

// Chrome is what every page's header shows.
type Chrome struct {
	Title string
	Who   string // the token's name
	Admin bool   // the token may write: the page shows its buttons
	// ActionKey authorises the page's buttons (act.go); empty for a
	// token that may only read, or without an API to act through.
	ActionKey string
	Now       stamp // the database clock
	// Still: the page does not refresh itself (?refresh=off), for a
	// screen someone reads at length, or a test.
	Still bool
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
	TraceID    string // the slot's OpenTelemetry trace; "" for a manual run
	Duration   string
	Outcome    string // "ok", "failed", "skipped", "running"
	Detail     string // the error or the skip reason
	Logs       []string
}

type jobView struct {
	Admin           bool      // the page's token may act on it: show the buttons
	Strip           stripView // the last slots, as a strip
	Chart           chartView // the last runs' durations (the job page's)
	Name            string
	Schedule        string
	Zone            string
	Overlap         string
	Next            stamp
	Starts          *stamp // when Next's run starts, delayed by the job's jitter; nil without one
	Jitter          string
	Enabled         bool
	DeclaredEnabled bool
	// Paused says why no slot is next, for a job that is off: "paused
	// by ops" (an override) or "disabled in its config".
	Paused   string
	Override *overrideView
	LastRun  *runView
	Lease    *leaseView
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
	// Ack is the operator's acknowledgement, nil when none; Acknowledged
	// says it is in force (the alert is open).
	Ack          *ackView
	Acknowledged bool
	// CanAck: the page's token may acknowledge it (an admin's, on an open
	// alert nobody acknowledged): show the button.
	CanAck bool
}

type ackView struct {
	By   string
	At   stamp
	Note string
}

// allowAck shows the acknowledge button on the open alerts nobody
// acknowledged, on a page whose token may act.
func allowAck(alerts []alertView, admin bool) {
	for i := range alerts {
		alerts[i].CanAck = admin && alerts[i].Open && alerts[i].Ack == nil
	}
}

type replicaView struct {
	client.Replica
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
	Running    *runView  // the run the job's lease holds now, as a row of its own
	Runs       []runView // by slot, newest first
	Limit      int
	Registered []replicaJob // the live replicas that register the job, with their settings
	// Backfills are the job's newest backfills (at most jobBackfills),
	// newest first.
	Backfills []backfillView
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

func (d *dashboard) chromeFor(r *http.Request, title string, id adminapi.Identity, now time.Time) Chrome {
	c := Chrome{Title: title, Who: id.Name, Now: at(now, time.UTC, time.Time{}), Still: r.URL.Query().Get("refresh") == "off"}
	if d.api != nil {
		c.ActionKey = d.actionKey(id, time.Now())
		c.Admin = c.ActionKey != ""
	}
	return c
}

func runOf(r client.Run, loc *time.Location, now time.Time) runView {
	v := runView{
		ID: r.ID, Started: parseAt(r.StartedAt, loc, now), Finished: parseAt(r.FinishedAt, loc, now),
		Slot: parseAt(r.Slot, loc, time.Time{}), Kind: "scheduled", Owner: r.Owner, Generation: r.Generation,
		Attempt: r.Attempt, Logs: r.Logs, TraceID: r.TraceID,
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

func jobOf(j client.Job, now time.Time) jobView {
	loc := zone(j.TimeZone)
	v := jobView{
		Name: j.Name, Schedule: j.Schedule, Zone: j.TimeZone, Overlap: j.Overlap, Next: parseAt(j.Next, loc, now),
		Enabled: j.Enabled, DeclaredEnabled: j.DeclaredEnabled,
	}
	if j.NextStart != nil && j.Jitter != nil {
		st := parseAt(j.NextStart, loc, now)
		v.Starts, v.Jitter = &st, *j.Jitter
	}
	if !j.Enabled {
		v.Paused = "disabled in its config"
		if o := j.Override; o != nil && o.Enabled != nil {
			v.Paused = "paused by " + o.By
			if o.Until != nil {
				v.Paused += " until " + parseAt(o.Until, loc, now).UTC
			}
		}
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

func (d *dashboard) alertViews(list []client.Alert, now time.Time) []alertView {
	jobs := map[string]string{} // name → zone
	for _, info := range d.sched.Jobs() {
		jobs[info.Job.Name] = info.Job.TimeZone
	}
	out := make([]alertView, 0, len(list))
	for _, a := range list {
		tz, isJob := jobs[a.Subject]
		loc := zone(tz)
		v := alertView{
			ID: a.ID, Kind: a.Kind, Subject: a.Subject, IsJob: isJob, Message: a.Message, Details: a.Details,
			RaisedBy: a.RaisedBy, Raised: parseAt(a.RaisedAt, loc, now), LastSeen: parseAt(a.LastSeenAt, loc, now),
			Resolved: parseAt(a.ResolvedAt, loc, now), Open: a.Open, Acknowledged: a.Acknowledged,
		}
		if k := a.Ack; k != nil {
			v.Ack = &ackView{By: k.By, At: parseAt(k.At, loc, now), Note: k.Note}
		}
		out = append(out, v)
	}
	return out
}

// monitor reads open alerts (of subject, when not empty) and replicas; op
// names a failed read.
func (d *dashboard) monitor(r *http.Request, subject string, now time.Time) (MonitorView, string, error) {
	st := d.sched.Store()
	alerts, err := adminview.Alerts(r.Context(), st, store.AlertListParams{OpenOnly: true, Subject: subject, Limit: client.MaxAlertsLimit})
	if err != nil {
		return MonitorView{}, "list alerts", err
	}
	reps, op, err := adminview.ReplicasAt(r.Context(), st, cronfence.MonitorLeaseName, d.liveFor, now)
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
	jobs, op, err := adminview.JobsAt(r.Context(), st, adminapi.Declared(d.sched.Jobs()...), now)
	if err != nil {
		d.storeError(w, r, op, err)
		return
	}
	mv, op, err := d.monitor(r, "", now)
	if err != nil {
		d.storeError(w, r, op, err)
		return
	}
	recent, err := d.recentRuns(r, jobs)
	if err != nil {
		d.storeError(w, r, "list runs", err)
		return
	}
	p := overviewPage{Chrome: d.chromeFor(r, "Jobs", id, now), MonitorView: mv}
	allowAck(p.Alerts, p.Admin)
	for i, j := range jobs {
		v := jobOf(j, now)
		v.Admin = p.Admin
		v.Strip, _ = historyOf(j, recent[i], now, overviewStrip)
		p.Jobs = append(p.Jobs, v)
	}
	d.render(w, http.StatusOK, "overview.html", p)
}

// Slots in the jobs table's strips, and in a job page's.
const (
	overviewStrip = 12
	jobStrip      = 30
)

// recentRuns reads each job's newest runs for its strip, in one round
// trip per store.MaxRunListJobs jobs: enough rows for overviewStrip slots
// of a few attempts each.
func (d *dashboard) recentRuns(r *http.Request, jobs []client.Job) ([][]client.Run, error) {
	names := make([]string, len(jobs))
	for i, j := range jobs {
		names[i] = j.Name
	}
	out := make([][]client.Run, 0, len(jobs))
	for chunk := range slices.Chunk(names, store.MaxRunListJobs) {
		got, err := d.sched.Store().RunListPerJob(r.Context(), store.RunListPerJobParams{Jobs: chunk, Limit: 3 * overviewStrip})
		if err != nil {
			return nil, err
		}
		for _, runs := range got {
			views := make([]client.Run, len(runs))
			for k, run := range runs {
				views[k] = adminview.RunOf(run)
			}
			out = append(out, views)
		}
	}
	return out, nil
}

// runOrder is where a run sits in a job page's list: its slot, or its
// start for a manual run.
func runOrder(r client.Run) time.Time {
	if t := parseTime(r.Slot); !t.IsZero() {
		return t
	}
	return parseTime(r.StartedAt)
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
	jobs, op, err := adminview.JobsAt(r.Context(), st, adminapi.Declared(*info), now)
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
	p := jobPage{Chrome: d.chromeFor(r, name, id, now), Job: jobOf(jobs[0], now), Limit: limit, MonitorView: mv}
	allowAck(p.Alerts, p.Admin)
	loc := zone(jobs[0].TimeZone)
	views := make([]client.Run, len(runs))
	for i, run := range runs {
		views[i] = adminview.RunOf(run)
	}
	p.Job.Strip, p.Job.Chart = historyOf(jobs[0], views, now, jobStrip)
	p.Job.Admin = p.Admin
	if p.Backfills, err = d.backfills(r, name, loc, now, p.Admin); err != nil {
		d.storeError(w, r, "list backfills", err)
		return
	}
	// By slot, newest first (a manual run by its start), each slot's
	// attempts newest first: a retry sits with its slot, not with
	// whatever ran in between.
	slices.SortStableFunc(views, func(a, b client.Run) int {
		return cmp.Or(runOrder(b).Compare(runOrder(a)), cmp.Compare(b.ID, a.ID))
	})
	for _, run := range views {
		p.Runs = append(p.Runs, runOf(run, loc, now))
	}
	if l := jobs[0].Lease; l != nil && l.Active {
		acquired := parseTime(l.AcquiredAt)
		p.Running = &runView{Started: parseAt(l.AcquiredAt, loc, now), Owner: l.Holder, Generation: l.Generation,
			Outcome: "running", Kind: "running", Duration: duration(now.Sub(acquired).Round(time.Second)) + " so far"}
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
	limit := queryLimit(r, alertsPageLimit, client.MaxAlertsLimit)
	p := alertsPage{Chrome: d.chromeFor(r, "Alerts", id, now), Limit: limit}
	list, err := adminview.Alerts(r.Context(), st, store.AlertListParams{Limit: limit})
	if err != nil {
		d.storeError(w, r, "list alerts", err)
		return
	}
	p.Alerts = d.alertViews(list, now)
	allowAck(p.Alerts, p.Admin)
	d.render(w, http.StatusOK, "alerts.html", p)
}
