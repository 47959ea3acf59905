package adminapi_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/admin/internal/adminapi"
	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
	"github.com/cronfence/cronfence/store/sqlite"
)

// monitorStore is a store that keeps the replica registry and alerts.
type monitorStore interface {
	store.Store
	store.Monitor
}

// openStores returns a fresh, migrated store of each kind.
func openStores(t *testing.T) map[string]func(t *testing.T) monitorStore {
	return map[string]func(t *testing.T) monitorStore{
		"sqlite": func(t *testing.T) monitorStore {
			st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cronfence.db"), nil)
			must(t, err)
			t.Cleanup(func() { _ = st.Close() })
			must(t, st.Migrate(context.Background()))
			return st
		},
		"postgres": func(t *testing.T) monitorStore {
			pool, schema := pgtest.Schema(t)
			st, err := postgres.New(pool, &postgres.Config{Schema: schema})
			must(t, err)
			t.Cleanup(func() { _ = st.Close() })
			must(t, st.Migrate(context.Background()))
			return st
		},
	}
}

// serveStore starts an API-only scheduler over st, with a job per name,
// behind the API.
func serveStore(t *testing.T, st store.Store, opts *adminapi.Options, jobs ...string) *bundle {
	t.Helper()
	// CheckEvery -1: this replica never runs the absence checks, so the
	// tests decide who holds their lease.
	sched, err := cronfence.New(cronfence.Config{Store: st, Logger: silent, DisableTimers: true, Owner: "api-replica", CheckEvery: -1})
	must(t, err)
	for _, name := range jobs {
		must(t, sched.Register(cronfence.Job{Name: name, Schedule: "@daily",
			Handler: func(ctx context.Context, run *cronfence.Run) error { return nil }}))
	}
	must(t, sched.Start(context.Background()))
	if opts == nil {
		opts = &adminapi.Options{}
	}
	opts.Logger = silent
	srv := httptest.NewServer(adminapi.New(sched, []adminapi.Token{
		{Name: "ops", Role: adminapi.RoleAdmin, Secret: adminSecret},
		{Name: "dash", Role: adminapi.RoleRead, Secret: readSecret},
	}, opts))
	t.Cleanup(func() {
		srv.Close()
		_ = sched.Stop(context.Background())
	})
	return &bundle{srv: srv, sched: sched}
}

// alertsJSON spells the wire shape out on its own rather than decoding into
// client.Alert: a renamed or retyped field of Alert must fail this test,
// not silently change both sides.
type alertsJSON struct {
	Alerts []struct {
		ID         int64             `json:"id"`
		Kind       string            `json:"kind"`
		Subject    string            `json:"subject"`
		Message    string            `json:"message"`
		Details    map[string]string `json:"details"`
		RaisedBy   string            `json:"raisedBy"`
		RaisedAt   *string           `json:"raisedAt"`
		LastSeenAt *string           `json:"lastSeenAt"`
		ResolvedAt *string           `json:"resolvedAt"`
		Open       bool              `json:"open"`
	} `json:"alerts"`
}

func TestAlertsEndpoint(t *testing.T) {
	t.Parallel()
	for kind, open := range openStores(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := open(t)
			b := serveStore(t, st, nil, "nightly")
			res, err := st.AlertRaise(ctx, store.AlertRaiseParams{Kind: store.AlertDeadlineMissed, Subject: "nightly",
				Message: "slot 2026-11-30T02:00:00Z not completed by its deadline", Details: map[string]string{"slot": "2026-11-30T02:00:00Z"}, RaisedBy: "r1"})
			must(t, err)
			if !res.Raised {
				t.Fatal("first AlertRaise did not raise")
			}
			_, err = st.AlertRaise(ctx, store.AlertRaiseParams{Kind: store.AlertSkipStreak, Subject: "nightly", Message: "5 skips in a row", RaisedBy: "r2"})
			must(t, err)
			_, resolved, err := st.AlertResolve(ctx, store.AlertSkipStreak, "nightly")
			must(t, err)
			if !resolved {
				t.Fatal("AlertResolve did not resolve")
			}

			var all alertsJSON
			if resp := b.do(t, "GET", "/api/admin/cron/alerts", readSecret, "", &all); resp.StatusCode != 200 {
				t.Fatalf("GET alerts: %d", resp.StatusCode)
			}
			if len(all.Alerts) != 2 || all.Alerts[0].Kind != "skip_streak" || all.Alerts[1].Kind != "deadline_missed" {
				t.Fatalf("all alerts, newest first: %+v", all.Alerts)
			}
			streak, missed := all.Alerts[0], all.Alerts[1]
			if streak.Open || streak.ResolvedAt == nil || streak.Details == nil || streak.RaisedBy != "r2" {
				t.Fatalf("resolved alert: %+v", streak)
			}
			if !missed.Open || missed.ResolvedAt != nil || missed.Subject != "nightly" || missed.Details["slot"] != "2026-11-30T02:00:00Z" ||
				missed.RaisedAt == nil || missed.LastSeenAt == nil || missed.ID == 0 || !strings.Contains(missed.Message, "deadline") {
				t.Fatalf("open alert: %+v", missed)
			}
			if _, err := time.Parse(time.RFC3339Nano, *missed.RaisedAt); err != nil {
				t.Fatalf("raisedAt %q: %v", *missed.RaisedAt, err)
			}

			var openOnly alertsJSON
			b.do(t, "GET", "/api/admin/cron/alerts?open=true", readSecret, "", &openOnly)
			if len(openOnly.Alerts) != 1 || openOnly.Alerts[0].ID != missed.ID {
				t.Fatalf("?open=true: %+v", openOnly.Alerts)
			}
			var limited alertsJSON
			b.do(t, "GET", "/api/admin/cron/alerts?open=false&limit=1", adminSecret, "", &limited)
			if len(limited.Alerts) != 1 || limited.Alerts[0].ID != streak.ID {
				t.Fatalf("?limit=1: %+v", limited.Alerts)
			}
			var byKind alertsJSON
			b.do(t, "GET", "/api/admin/cron/alerts?kind=skip_streak&subject=nightly", readSecret, "", &byKind)
			if len(byKind.Alerts) != 1 || byKind.Alerts[0].ID != streak.ID {
				t.Fatalf("?kind=skip_streak: %+v", byKind.Alerts)
			}

			for _, q := range []string{"0", "-1", "1001", "x", ""} {
				b.wantErr(t, "GET", "/api/admin/cron/alerts?limit="+q, readSecret, "", 400, "INVALID_LIMIT")
			}
			b.wantErr(t, "GET", "/api/admin/cron/alerts?open=maybe", readSecret, "", 400, "INVALID_PARAMETER")
			b.wantErr(t, "GET", "/api/admin/cron/alerts?kind=Not-A-Kind", readSecret, "", 400, "INVALID_ARGUMENT")
			b.wantErr(t, "GET", "/api/admin/cron/alerts", "", "", 401, "UNAUTHORIZED")
			b.wantErr(t, "GET", "/api/admin/cron/alerts", "wrong", "", 401, "UNAUTHORIZED")
			resp := b.wantErr(t, "POST", "/api/admin/cron/alerts", adminSecret, "", 405, "METHOD_NOT_ALLOWED")
			if resp.Header.Get("Allow") != "GET, HEAD, PUT" {
				t.Fatalf("POST alerts: Allow %q", resp.Header.Get("Allow"))
			}

			must(t, st.Close())
			b.wantErr(t, "GET", "/api/admin/cron/alerts", readSecret, "", 503, "STORE_UNAVAILABLE")
		})
	}
}

// ackedJSON is one alert's acknowledgement on the wire, spelled out.
type ackedJSON struct {
	ID           int64 `json:"id"`
	Open         bool  `json:"open"`
	Acknowledged bool  `json:"acknowledged"`
	Ack          *struct {
		By   string  `json:"by"`
		At   *string `json:"at"`
		Note string  `json:"note"`
	} `json:"ack"`
}

// An admin token acknowledges the open alert of a kind and subject, as its
// holder, with a note; a read-only token is refused and changes nothing;
// an alert that is not open (or not the one named) is 404.
func TestAlertAcknowledgeEndpoint(t *testing.T) {
	t.Parallel()
	for kind, open := range openStores(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := open(t)
			b := serveStore(t, st, nil, "nightly")
			res, err := st.AlertRaise(ctx, store.AlertRaiseParams{Kind: store.AlertFailing, Subject: "a/job", Message: "failing", RaisedBy: "r1"})
			must(t, err)
			path := client.AlertAckPath("failing", "a/job")
			if path != "/api/admin/cron/alerts/failing/a%2Fjob/ack" {
				t.Fatalf("AlertAckPath = %q", path)
			}

			b.wantErr(t, "POST", path, readSecret, `{"note": "mine"}`, 403, "FORBIDDEN")
			b.wantErr(t, "POST", path, "", "", 401, "UNAUTHORIZED")
			if list, err := st.AlertList(ctx, store.AlertListParams{}); err != nil || !list[0].Ack.IsZero() {
				t.Fatalf("after refused acknowledgements: %+v, %v; want none recorded", list, err)
			}
			b.wantErr(t, "POST", path, adminSecret, `{"alertId": `+strconv.FormatInt(res.Alert.ID+1, 10)+`}`, 404, "ALERT_NOT_FOUND")
			b.wantErr(t, "POST", client.AlertAckPath("slow_run", "a/job"), adminSecret, "", 404, "ALERT_NOT_FOUND")
			b.wantErr(t, "POST", client.AlertAckPath("Not-A-Kind", "a/job"), adminSecret, "", 400, "INVALID_ARGUMENT")
			b.wantErr(t, "POST", path, adminSecret, `{"note": "`+strings.Repeat("n", store.MaxNoteLength+1)+`"}`, 400, "INVALID_ARGUMENT")
			b.wantErr(t, "POST", path, adminSecret, `{"by": "someone else"}`, 400, "MALFORMED_BODY")
			resp := b.wantErr(t, "GET", path, adminSecret, "", 405, "METHOD_NOT_ALLOWED")
			if resp.Header.Get("Allow") != "POST" {
				t.Fatalf("GET ack: Allow %q", resp.Header.Get("Allow"))
			}

			var got ackedJSON
			if resp := b.do(t, "POST", path, adminSecret, `{"note": "the disk is being replaced", "alertId": `+strconv.FormatInt(res.Alert.ID, 10)+`}`, &got); resp.StatusCode != 200 {
				t.Fatalf("POST ack: %d %+v", resp.StatusCode, got)
			}
			if got.ID != res.Alert.ID || !got.Open || !got.Acknowledged || got.Ack == nil || got.Ack.By != "ops" ||
				got.Ack.Note != "the disk is being replaced" || got.Ack.At == nil {
				t.Fatalf("acknowledged alert: %+v; want it acknowledged by the token's holder, ops, with the note", got)
			}
			// Without a body, no note: the acknowledgement is replaced.
			if resp := b.do(t, "POST", path, adminSecret, "", &got); resp.StatusCode != 200 || got.Ack == nil || got.Ack.Note != "" {
				t.Fatalf("POST ack without a body: %d %+v", resp.StatusCode, got)
			}
			var list struct {
				Alerts []ackedJSON `json:"alerts"`
			}
			b.do(t, "GET", "/api/admin/cron/alerts?open=true", readSecret, "", &list)
			if len(list.Alerts) != 1 || !list.Alerts[0].Acknowledged || list.Alerts[0].Ack == nil || list.Alerts[0].Ack.By != "ops" {
				t.Fatalf("listed: %+v; want the alert shown acknowledged by ops", list.Alerts)
			}
			if _, _, err := st.AlertResolve(ctx, store.AlertFailing, "a/job"); err != nil {
				t.Fatal(err)
			}
			b.wantErr(t, "POST", path, adminSecret, "", 404, "ALERT_NOT_FOUND")
			b.do(t, "GET", "/api/admin/cron/alerts", readSecret, "", &list)
			if len(list.Alerts) != 1 || list.Alerts[0].Acknowledged || list.Alerts[0].Ack == nil {
				t.Fatalf("resolved: %+v; want it not counted as acknowledged, its acknowledgement kept", list.Alerts)
			}
		})
	}
}

type replicasJSON struct {
	Now     *string `json:"now"`
	LiveFor string  `json:"liveFor"`
	Monitor *struct {
		Holder     string  `json:"holder"`
		Generation int64   `json:"generation"`
		LastPassAt *string `json:"lastPassAt"`
		ExpiresAt  *string `json:"expiresAt"`
		Active     bool    `json:"active"`
	} `json:"monitor"`
	Replicas []struct {
		Owner        string  `json:"owner"`
		Host         string  `json:"host"`
		PID          int     `json:"pid"`
		Version      string  `json:"version"`
		StartedAt    *string `json:"startedAt"`
		HeartbeatAt  *string `json:"heartbeatAt"`
		HeartbeatAge string  `json:"heartbeatAge"`
		Live         bool    `json:"live"`
		ClockOffset  string  `json:"clockOffset"`
		Timers       bool    `json:"timers"`
		Jobs         []struct {
			Name        string `json:"name"`
			Schedule    string `json:"schedule"`
			TimeZone    string `json:"timeZone"`
			Timeout     string `json:"timeout"`
			LeaseTTL    string `json:"leaseTTL"`
			MaxAttempts int    `json:"maxAttempts"`
			Hash        string `json:"hash"`
		} `json:"jobs"`
	} `json:"replicas"`
}

// A replica is live while its last heartbeat is within ReplicaLiveFor of
// the database clock.
func TestReplicasEndpoint(t *testing.T) {
	t.Parallel()
	const liveFor = 1500 * time.Millisecond
	for kind, open := range openStores(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := open(t)
			b := serveStore(t, st, &adminapi.Options{ReplicaLiveFor: liveFor})
			old, err := st.ReplicaHeartbeat(ctx, store.Replica{Owner: "old:1:aa", Host: "host-a", PID: 11, Version: "v1", Timers: true,
				ClockOffset: 1500 * time.Millisecond,
				Jobs: []store.ReplicaJob{{Name: "nightly", Schedule: "0 2 * * *", TimeZone: "Europe/Lisbon", Timeout: time.Hour,
					LeaseTTL: time.Minute, Overlap: "skip", MaxAttempts: 3, Hash: "abc"}}})
			must(t, err)
			// Let the first heartbeat age past liveFor by the database clock.
			deadline := time.Now().Add(30 * time.Second)
			for {
				now, err := st.Now(ctx)
				must(t, err)
				if now.Sub(old.HeartbeatAt) > liveFor {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the database clock did not advance")
				}
				time.Sleep(50 * time.Millisecond)
			}
			_, err = st.ReplicaHeartbeat(ctx, store.Replica{Owner: "new:2:bb", Host: "host-b", PID: 22, Version: "v1"})
			must(t, err)

			var got replicasJSON
			if resp := b.do(t, "GET", "/api/admin/cron/replicas", readSecret, "", &got); resp.StatusCode != 200 {
				t.Fatalf("GET replicas: %d", resp.StatusCode)
			}
			if got.Now == nil || got.LiveFor != liveFor.String() {
				t.Fatalf("now %v liveFor %q", got.Now, got.LiveFor)
			}
			seen := map[string]bool{}
			for _, r := range got.Replicas {
				seen[r.Owner] = true
				switch r.Owner {
				case "old:1:aa":
					if r.Live || r.Host != "host-a" || r.PID != 11 || r.Version != "v1" || !r.Timers || r.ClockOffset != "1.5s" ||
						r.StartedAt == nil || r.HeartbeatAt == nil || len(r.Jobs) != 1 {
						t.Fatalf("stale replica: %+v", r)
					}
					j := r.Jobs[0]
					if j.Name != "nightly" || j.Schedule != "0 2 * * *" || j.TimeZone != "Europe/Lisbon" || j.Timeout != "1h0m0s" ||
						j.LeaseTTL != "1m0s" || j.MaxAttempts != 3 || j.Hash != "abc" {
						t.Fatalf("stale replica's job: %+v", j)
					}
					if age, err := time.ParseDuration(r.HeartbeatAge); err != nil || age <= liveFor {
						t.Fatalf("stale replica's heartbeatAge %q", r.HeartbeatAge)
					}
				case "new:2:bb":
					if !r.Live || r.Timers || r.Jobs == nil || len(r.Jobs) != 0 {
						t.Fatalf("fresh replica: %+v", r)
					}
				}
			}
			if !seen["old:1:aa"] || !seen["new:2:bb"] {
				t.Fatalf("replicas: %+v", got.Replicas)
			}
			if got.Monitor != nil {
				t.Fatalf("monitor before anyone ran the checks: %+v", got.Monitor)
			}
			// A replica takes the absence checks' lease: the list names it.
			ml, ok, err := st.LeaseAcquire(ctx, store.LeaseAcquireParams{Name: cronfence.MonitorLeaseName, Owner: "new:2:bb", TTL: time.Minute})
			if err != nil || !ok {
				t.Fatalf("taking the monitor lease: %v %v", ok, err)
			}
			b.do(t, "GET", "/api/admin/cron/replicas", readSecret, "", &got)
			if m := got.Monitor; m == nil || m.Holder != "new:2:bb" || m.Generation != ml.Generation || !m.Active || m.LastPassAt == nil || m.ExpiresAt == nil {
				t.Fatalf("monitor: %+v", got.Monitor)
			}
			if _, err := st.LeaseRelease(ctx, ml.Ref()); err != nil {
				t.Fatal(err)
			}
			b.do(t, "GET", "/api/admin/cron/replicas", readSecret, "", &got)
			if m := got.Monitor; m == nil || m.Active {
				t.Fatalf("monitor after release: %+v", got.Monitor)
			}
			b.wantErr(t, "GET", "/api/admin/cron/replicas", "", "", 401, "UNAUTHORIZED")
			b.wantErr(t, "PUT", "/api/admin/cron/replicas/run", adminSecret, "", 405, "METHOD_NOT_ALLOWED")

			must(t, st.Close())
			b.wantErr(t, "GET", "/api/admin/cron/replicas", readSecret, "", 503, "STORE_UNAVAILABLE")
		})
	}
}

// Jobs named "alerts" and "replicas": the literal GET is the endpoint, an
// escaped spelling reads the job, and PUT, /run and /logs reach the job as
// written.
func TestJobsNamedLikeEndpoints(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cronfence.db"), nil)
	must(t, err)
	t.Cleanup(func() { _ = st.Close() })
	must(t, st.Migrate(context.Background()))
	b := serveStore(t, st, nil, "alerts", "replicas")

	var list alertsJSON
	if resp := b.do(t, "GET", "/api/admin/cron/alerts", readSecret, "", &list); resp.StatusCode != 200 || list.Alerts == nil {
		t.Fatalf("GET alerts: %d %+v", resp.StatusCode, list)
	}
	var reps replicasJSON
	if resp := b.do(t, "GET", "/api/admin/cron/replicas", readSecret, "", &reps); resp.StatusCode != 200 || reps.Now == nil {
		t.Fatalf("GET replicas: %d %+v", resp.StatusCode, reps)
	}
	for path, name := range map[string]string{"/api/admin/cron/%61lerts": "alerts", "/api/admin/cron/%72eplicas": "replicas"} {
		var j jobJSON
		if resp := b.do(t, "GET", path, readSecret, "", &j); resp.StatusCode != 200 || j.Name != name {
			t.Fatalf("GET %s: %d %+v", path, resp.StatusCode, j)
		}
	}
	var put jobJSON
	if resp := b.do(t, "PUT", "/api/admin/cron/alerts", adminSecret, `{"enabled":false}`, &put); resp.StatusCode != 200 || put.Name != "alerts" || put.Enabled {
		t.Fatalf("PUT alerts: %d %+v", resp.StatusCode, put)
	}
	var j jobJSON
	b.do(t, "GET", "/api/admin/cron/%61lerts", readSecret, "", &j)
	if j.Enabled || j.Override == nil {
		t.Fatalf("job alerts after PUT: %+v", j)
	}
	if resp := b.do(t, "GET", "/api/admin/cron/replicas/logs", readSecret, "", nil); resp.StatusCode != 200 {
		t.Fatalf("GET replicas/logs: %d", resp.StatusCode)
	}
	if resp := b.do(t, "POST", "/api/admin/cron/replicas/run", adminSecret, "", nil); resp.StatusCode != 202 {
		t.Fatalf("POST replicas/run: %d", resp.StatusCode)
	}
}
