package adminapi_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/admin/internal/adminapi"
	"github.com/cronfence/cronfence/store"
)

// serveSchedules starts an API-only scheduler over st that registers the
// kinds "report" and "shell" and declares the job "nightly", behind the
// API.
func serveSchedules(t *testing.T, st store.Store) *bundle {
	t.Helper()
	sched, err := cronfence.New(cronfence.Config{Store: st, Logger: silent, DisableTimers: true, Owner: "api-replica", CheckEvery: -1})
	must(t, err)
	noop := func(context.Context, *cronfence.Run) error { return nil }
	must(t, sched.RegisterKind("report", noop))
	must(t, sched.RegisterKind(adminapi.ShellKind, noop))
	must(t, sched.Register(cronfence.Job{Name: "nightly", Schedule: "@daily", Handler: noop}))
	must(t, sched.Start(context.Background()))
	srv := httptest.NewServer(adminapi.New(sched, []adminapi.Token{
		{Name: "ops", Role: adminapi.RoleAdmin, Secret: adminSecret},
		{Name: "dash", Role: adminapi.RoleRead, Secret: readSecret},
	}, &adminapi.Options{Logger: silent}))
	t.Cleanup(func() {
		srv.Close()
		_ = sched.Stop(context.Background())
	})
	return &bundle{srv: srv, sched: sched}
}

// scheduleJSON spells the wire shape out rather than decoding into
// client.Schedule, so a renamed field fails here.
type scheduleJSON struct {
	Name          string          `json:"name"`
	ID            int64           `json:"id"`
	Version       int64           `json:"version"`
	Spec          string          `json:"spec"`
	TimeZone      string          `json:"timeZone"`
	Exclude       []string        `json:"exclude"`
	Kind          string          `json:"kind"`
	Args          json.RawMessage `json:"args"`
	Overlap       string          `json:"overlap"`
	CatchUpWindow string          `json:"catchUpWindow"`
	LeaseTTL      string          `json:"leaseTTL"`
	Timeout       string          `json:"timeout"`
	Deadline      string          `json:"deadline"`
	MaxAttempts   int             `json:"maxAttempts"`
	RetryBackoff  string          `json:"retryBackoff"`
	Disabled      bool            `json:"disabled"`
	CreatedAt     *string         `json:"createdAt"`
	CreatedBy     string          `json:"createdBy"`
	UpdatedAt     *string         `json:"updatedAt"`
	UpdatedBy     string          `json:"updatedBy"`
}

type auditJSON struct {
	Changes []struct {
		Seq    int64         `json:"seq"`
		Action string        `json:"action"`
		Name   string        `json:"name"`
		By     string        `json:"by"`
		At     *string       `json:"at"`
		Before *scheduleJSON `json:"before"`
		After  *scheduleJSON `json:"after"`
	} `json:"changes"`
	Next *int64 `json:"next"`
}

// A schedule created, read, listed by pages, updated with the version
// read, refused with a stale one, deleted, and every change in the audit
// with who made it: on every store.
func TestSchedulesEndpoints(t *testing.T) {
	t.Parallel()
	for name, open := range openStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := serveSchedules(t, open(t))

			var sc scheduleJSON
			resp := b.do(t, "POST", "/api/admin/cron/schedules", adminSecret,
				`{"name":"tenant-42","spec":"0 6 * * *","timeZone":"Europe/Lisbon","kind":"report","args":{"tenant":42},"catchUpWindow":"90s","maxAttempts":2,"exclude":["* * 25 12 *","2026-12-31/2027-01-01"]}`, &sc)
			if resp.StatusCode != 201 || resp.Header.Get("Location") != "schedules/tenant-42" {
				t.Fatalf("POST: %d, Location %q, %+v", resp.StatusCode, resp.Header.Get("Location"), sc)
			}
			if sc.Name != "tenant-42" || sc.Version != 1 || sc.Spec != "0 6 * * *" || sc.TimeZone != "Europe/Lisbon" || sc.Kind != "report" ||
				string(sc.Args) != `{"tenant":42}` || sc.CatchUpWindow != "1m30s" || sc.MaxAttempts != 2 || sc.Timeout != "0s" ||
				sc.CreatedBy != "ops" || sc.UpdatedBy != "ops" || sc.CreatedAt == nil || len(sc.Exclude) != 2 || sc.Exclude[0] != "* * 25 12 *" {
				t.Fatalf("created: %+v", sc)
			}
			var got scheduleJSON
			if resp := b.do(t, "GET", "/api/admin/cron/schedules/tenant-42", readSecret, "", &got); resp.StatusCode != 200 || got.Version != 1 || got.ID != sc.ID {
				t.Fatalf("GET: %d %+v", resp.StatusCode, got)
			}

			for _, n := range []string{"tenant-43", "tenant-44"} {
				if resp := b.do(t, "POST", "/api/admin/cron/schedules", adminSecret, `{"name":"`+n+`","spec":"@hourly","kind":"report"}`, nil); resp.StatusCode != 201 {
					t.Fatalf("POST %s: %d", n, resp.StatusCode)
				}
			}
			var page struct {
				Schedules []scheduleJSON `json:"schedules"`
				Next      *string        `json:"next"`
			}
			b.do(t, "GET", "/api/admin/cron/schedules?limit=2", readSecret, "", &page)
			if len(page.Schedules) != 2 || page.Schedules[0].Name != "tenant-42" || page.Next == nil || *page.Next != "tenant-43" {
				t.Fatalf("first page: %+v", page)
			}
			page.Next = nil
			b.do(t, "GET", "/api/admin/cron/schedules?limit=2&after=tenant-43", readSecret, "", &page)
			if len(page.Schedules) != 1 || page.Schedules[0].Name != "tenant-44" || page.Next != nil {
				t.Fatalf("last page: %+v", page)
			}

			var upd scheduleJSON
			if resp := b.do(t, "PUT", "/api/admin/cron/schedules/tenant-42", adminSecret,
				`{"version":1,"spec":"0 7 * * *","kind":"report","args":[1,2]}`, &upd); resp.StatusCode != 200 || upd.Version != 2 || upd.Spec != "0 7 * * *" || string(upd.Args) != "[1,2]" {
				t.Fatalf("PUT: %d %+v", resp.StatusCode, upd)
			}
			var conflict apiErr
			if resp := b.do(t, "PUT", "/api/admin/cron/schedules/tenant-42", adminSecret, `{"version":1,"spec":"0 8 * * *","kind":"report"}`, &conflict); resp.StatusCode != 409 ||
				conflict.Code != "SCHEDULE_CONFLICT" || !strings.Contains(string(conflict.Details), `"currentVersion":2`) {
				t.Fatalf("PUT a stale version: %d %+v", resp.StatusCode, conflict)
			}
			if resp := b.do(t, "POST", "/api/admin/cron/schedules", adminSecret, `{"name":"tenant-42","spec":"@daily","kind":"report"}`, &conflict); resp.StatusCode != 409 ||
				!strings.Contains(string(conflict.Details), `"currentVersion":2`) {
				t.Fatalf("POST a taken name: %d %+v", resp.StatusCode, conflict)
			}
			b.wantErr(t, "DELETE", "/api/admin/cron/schedules/tenant-42?version=1", adminSecret, "", 409, "SCHEDULE_CONFLICT")
			var del scheduleJSON
			if resp := b.do(t, "DELETE", "/api/admin/cron/schedules/tenant-42?version=2", adminSecret, "", &del); resp.StatusCode != 200 || del.Version != 2 {
				t.Fatalf("DELETE: %d %+v", resp.StatusCode, del)
			}
			b.wantErr(t, "GET", "/api/admin/cron/schedules/tenant-42", readSecret, "", 404, "SCHEDULE_NOT_FOUND")
			b.wantErr(t, "PUT", "/api/admin/cron/schedules/tenant-42", adminSecret, `{"version":2,"spec":"@daily","kind":"report"}`, 404, "SCHEDULE_NOT_FOUND")

			var audit auditJSON
			b.do(t, "GET", "/api/admin/cron/schedules/tenant-42/audit", readSecret, "", &audit)
			if len(audit.Changes) != 3 || audit.Changes[0].Action != "delete" || audit.Changes[1].Action != "update" || audit.Changes[2].Action != "create" {
				t.Fatalf("audit of tenant-42: %+v", audit)
			}
			u := audit.Changes[1]
			if u.By != "ops" || u.At == nil || u.Before == nil || u.Before.Spec != "0 6 * * *" || u.After == nil || u.After.Spec != "0 7 * * *" {
				t.Fatalf("the update's entry: %+v", u)
			}
			if audit.Changes[0].After != nil || audit.Changes[2].Before != nil {
				t.Fatalf("a create has no before, a delete no after: %+v", audit)
			}
			var all auditJSON
			b.do(t, "GET", "/api/admin/cron/schedules-audit?limit=4", readSecret, "", &all)
			if len(all.Changes) != 4 || all.Next == nil || all.Changes[0].Seq <= all.Changes[3].Seq {
				t.Fatalf("every change, newest first: %+v", all)
			}
			var rest auditJSON
			b.do(t, "GET", "/api/admin/cron/schedules-audit?before="+strconv.FormatInt(*all.Next, 10), readSecret, "", &rest)
			if len(rest.Changes) != 1 || rest.Changes[0].Action != "create" || rest.Next != nil {
				t.Fatalf("the older page: %+v", rest)
			}
		})
	}
}

// Bad input is answered 400 naming the field (403 for a read token), and
// nothing is written: no schedule, no audit entry.
func TestScheduleBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	for name, open := range openStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := serveSchedules(t, open(t))
			for _, tc := range []struct {
				body, code, names string
			}{
				{`{"name":"a","spec":"61 * * * *","kind":"report"}`, "INVALID_ARGUMENT", "61"},
				{`{"name":"a","spec":"@daily","timeZone":"Mars/Olympus","kind":"report"}`, "INVALID_ARGUMENT", "Mars/Olympus"},
				{`{"name":"a","spec":"@daily","kind":"no-such-kind"}`, "INVALID_ARGUMENT", "no-such-kind"},
				{`{"name":"a","spec":"@daily","kind":""}`, "INVALID_ARGUMENT", "kind"},
				{`{"name":"","spec":"@daily","kind":"report"}`, "INVALID_ARGUMENT", "name"},
				{`{"name":"` + strings.Repeat("n", 151) + `","spec":"@daily","kind":"report"}`, "INVALID_ARGUMENT", "name"},
				{`{"name":"nightly","spec":"@daily","kind":"report"}`, "INVALID_ARGUMENT", "declared job"},
				{`{"name":"a","spec":"@daily","kind":"report","catchUpWindow":"5x"}`, "INVALID_ARGUMENT", "catchUpWindow"},
				{`{"name":"a","spec":"@daily","kind":"report","timeout":"-1s"}`, "INVALID_ARGUMENT", "timeout"},
				{`{"name":"a","spec":"@daily","kind":"report","maxAttempts":-1}`, "INVALID_ARGUMENT", "maxAttempts"},
				{`{"name":"a","spec":"@daily","kind":"report","overlap":"sometimes"}`, "INVALID_ARGUMENT", "overlap"},
				{`{"name":"a","spec":"@daily","kind":"report","catchUp":"every","catchUpWindow":"1h"}`, "INVALID_ARGUMENT", "catch-up must be none, latest or all"},
				{`{"name":"a","spec":"@daily","kind":"report","catchUp":"all"}`, "INVALID_ARGUMENT", "needs a CatchUpWindow"},
				{`{"name":"a","spec":"@daily","kind":"report","catchUp":"all","catchUpWindow":"1h","maxCatchUp":10001}`, "INVALID_ARGUMENT", "max catch-up"},
				{`{"name":"a","spec":"@daily","kind":"report","catchUp":"all","catchUpWindow":"240h"}`, "INVALID_ARGUMENT", "Retention"},
				{`{"name":"a","spec":"* * * * *","kind":"report","jitter":"1m"}`, "INVALID_ARGUMENT", "Jitter 1m0s must be below the shortest interval"},
				{`{"name":"a","spec":"@daily","kind":"report","jitter":"soon"}`, "INVALID_ARGUMENT", "jitter"},
				{`{"name":"a","spec":"@daily","kind":"report","exclude":["2026-12-27/2026-12-24"]}`, "INVALID_ARGUMENT", `exclusion "2026-12-27/2026-12-24": its end`},
				{`{"name":"a","spec":"@daily","kind":"report","exclude":["2026-12-24/2026-12-27","2026-12-26/2026-12-28"]}`, "INVALID_ARGUMENT", "overlap"},
				{`{"name":"a","spec":"@daily","kind":"report","exclude":"* * 25 12 *"}`, "MALFORMED_BODY", "exclude"},
				{`{"name":"a","spec":"@daily","kind":"report","args":"` + strings.Repeat("x", store.MaxScheduleArgsBytes) + `"}`, "INVALID_ARGUMENT", "args"},
				{`{"name":"a","spec":"@daily","kind":"report","args":{"x":}}`, "MALFORMED_BODY", "invalid character"},
				{`{"name":"a","spec":"@daily","kind":"report","colour":"red"}`, "MALFORMED_BODY", "colour"},
				{`{"name":"a","spec":"@daily","kind":"shell","args":{"cmd":"rm -rf /"}}`, "INVALID_ARGUMENT", "args"},
				{`{"name":"a","spec":"@daily","kind":"shell"}`, "INVALID_ARGUMENT", "args"},
			} {
				var e apiErr
				resp := b.do(t, "POST", "/api/admin/cron/schedules", adminSecret, tc.body, &e)
				if resp.StatusCode != 400 || e.Code != tc.code || !strings.Contains(e.Message, tc.names) {
					t.Errorf("POST %.80s: %d %s %q, want 400 %s naming %q", tc.body, resp.StatusCode, e.Code, e.Message, tc.code, tc.names)
				}
			}
			b.wantErr(t, "POST", "/api/admin/cron/schedules", readSecret, `{"name":"a","spec":"@daily","kind":"report"}`, 403, "FORBIDDEN")

			// One stored, then bad updates and deletes leave it as it was.
			if resp := b.do(t, "POST", "/api/admin/cron/schedules", adminSecret, `{"name":"kept","spec":"@daily","kind":"report"}`, nil); resp.StatusCode != 201 {
				t.Fatalf("POST kept: %d", resp.StatusCode)
			}
			b.wantErr(t, "PUT", "/api/admin/cron/schedules/kept", adminSecret, `{"spec":"@hourly","kind":"report"}`, 400, "INVALID_ARGUMENT")
			b.wantErr(t, "PUT", "/api/admin/cron/schedules/kept", adminSecret, `{"version":1,"spec":"@hourly","kind":"report","leaseTTL":"200h"}`, 400, "INVALID_ARGUMENT")
			b.wantErr(t, "PUT", "/api/admin/cron/schedules/kept", readSecret, `{"version":1,"spec":"@hourly","kind":"report"}`, 403, "FORBIDDEN")
			b.wantErr(t, "DELETE", "/api/admin/cron/schedules/kept?version=x", adminSecret, "", 400, "INVALID_ARGUMENT")
			b.wantErr(t, "DELETE", "/api/admin/cron/schedules/kept", readSecret, "", 403, "FORBIDDEN")
			b.wantErr(t, "GET", "/api/admin/cron/schedules?limit=0", readSecret, "", 400, "INVALID_LIMIT")
			b.wantErr(t, "PATCH", "/api/admin/cron/schedules/kept", adminSecret, "", 405, "METHOD_NOT_ALLOWED")

			var page struct {
				Schedules []scheduleJSON `json:"schedules"`
			}
			b.do(t, "GET", "/api/admin/cron/schedules", readSecret, "", &page)
			if len(page.Schedules) != 1 || page.Schedules[0].Name != "kept" || page.Schedules[0].Version != 1 || page.Schedules[0].Spec != "@daily" {
				t.Fatalf("after the bad input: %+v", page.Schedules)
			}
			var audit auditJSON
			b.do(t, "GET", "/api/admin/cron/schedules-audit", readSecret, "", &audit)
			if len(audit.Changes) != 1 || audit.Changes[0].Name != "kept" {
				t.Fatalf("audit after the bad input: %+v", audit.Changes)
			}
		})
	}
}

// A store that does not answer is a 503 for every schedules endpoint.
func TestSchedulesStoreUnavailable(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	must(t, b.sched.RegisterKind("report", func(context.Context, *cronfence.Run) error { return nil }))
	must(t, b.store.Close())
	b.wantErr(t, "POST", "/api/admin/cron/schedules", adminSecret, `{"name":"a","spec":"@daily","kind":"report"}`, 503, "STORE_UNAVAILABLE")
	b.wantErr(t, "PUT", "/api/admin/cron/schedules/a", adminSecret, `{"version":1,"spec":"@daily","kind":"report"}`, 503, "STORE_UNAVAILABLE")
	b.wantErr(t, "DELETE", "/api/admin/cron/schedules/a", adminSecret, "", 503, "STORE_UNAVAILABLE")
	b.wantErr(t, "GET", "/api/admin/cron/schedules", readSecret, "", 503, "STORE_UNAVAILABLE")
	b.wantErr(t, "GET", "/api/admin/cron/schedules/a", readSecret, "", 503, "STORE_UNAVAILABLE")
	b.wantErr(t, "GET", "/api/admin/cron/schedules-audit", readSecret, "", 503, "STORE_UNAVAILABLE")
}

// A job named "schedules" is reached escaped, as client.JobPath writes it;
// the literal segment is the schedules' endpoints.
func TestJobNamedSchedules(t *testing.T) {
	t.Parallel()
	for name, open := range openStores(t) {
		if name != "sqlite" {
			continue
		}
		b := serveSchedules(t, open(t))
		noop := func(context.Context, *cronfence.Run) error { return nil }
		must(t, b.sched.Register(cronfence.Job{Name: "schedules", Schedule: "@daily", Handler: noop}))
		must(t, b.sched.Register(cronfence.Job{Name: "schedules-audit", Schedule: "@daily", Handler: noop}))
		for _, job := range []string{"schedules", "schedules-audit"} {
			var j jobJSON
			if resp := b.do(t, "GET", client.JobPath(job), readSecret, "", &j); resp.StatusCode != 200 || j.Name != job {
				t.Fatalf("GET %s: %d %+v", client.JobPath(job), resp.StatusCode, j)
			}
			var put jobJSON
			if resp := b.do(t, "PUT", client.JobPath(job), adminSecret, `{"enabled":false}`, &put); resp.StatusCode != 200 || put.Name != job || put.Enabled {
				t.Fatalf("PUT %s: %d %+v", client.JobPath(job), resp.StatusCode, put)
			}
		}
		var page struct {
			Schedules []scheduleJSON `json:"schedules"`
		}
		if resp := b.do(t, "GET", "/api/admin/cron/schedules", readSecret, "", &page); resp.StatusCode != 200 || page.Schedules == nil {
			t.Fatalf("GET schedules: %d %+v", resp.StatusCode, page)
		}
	}
}

// A deleted schedule keeps its history: GET …/logs answers its runs after
// the delete; a name that never ran is still 404.
func TestDeletedScheduleKeepsItsLogs(t *testing.T) {
	t.Parallel()
	for kind, open := range openStores(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			b := serveSchedules(t, open(t))
			var created scheduleJSON
			if resp := b.do(t, "POST", "/api/admin/cron/schedules", adminSecret, `{"name":"tenant-7","spec":"@hourly","kind":"report"}`, &created); resp.StatusCode != 201 {
				t.Fatalf("POST: %d %+v", resp.StatusCode, created)
			}
			slot := time.Now().Truncate(time.Hour)
			if _, err := b.sched.Store().RunInsert(context.Background(), store.Run{Job: "tenant-7", Slot: slot, StartedAt: slot, FinishedAt: slot.Add(time.Second),
				Owner: "replica-2", Generation: 1, Success: true}); err != nil {
				t.Fatal(err)
			}
			if resp := b.do(t, "DELETE", "/api/admin/cron/schedules/tenant-7?version=1", adminSecret, "", nil); resp.StatusCode != 200 {
				t.Fatalf("DELETE: %d", resp.StatusCode)
			}
			var logs struct {
				JobID string    `json:"jobId"`
				Logs  []runJSON `json:"logs"`
			}
			if resp := b.do(t, "GET", "/api/admin/cron/tenant-7/logs", readSecret, "", &logs); resp.StatusCode != 200 || logs.JobID != "tenant-7" || len(logs.Logs) != 1 {
				t.Fatalf("GET the deleted schedule's logs: %d %+v, want its one run", resp.StatusCode, logs)
			}
			b.wantErr(t, "GET", "/api/admin/cron/tenant-8/logs", readSecret, "", 404, "CRON_JOB_NOT_FOUND")
		})
	}
}
