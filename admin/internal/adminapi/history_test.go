package adminapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// GET …/logs lists a job's runs newest first by when they started, not by
// when their rows were written: a run recorded when it ends comes after
// the skips recorded while it ran, which started later.
func TestLogsAreNewestStartedFirst(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	if resp := b.do(t, "POST", "/api/admin/cron/slow/run", adminSecret, "", nil); resp.StatusCode != 202 {
		t.Fatalf("POST run: %d", resp.StatusCode)
	}
	<-b.started
	// Two refusals while it runs, each recorded at once as a skip row.
	for range 2 {
		if resp := b.do(t, "POST", "/api/admin/cron/slow/run", adminSecret, "", nil); resp.StatusCode != 409 {
			t.Fatalf("POST run while one runs: %d, want 409", resp.StatusCode)
		}
	}
	close(b.release)
	var logs struct{ Logs []runJSON }
	deadline := time.Now().Add(10 * time.Second)
	for len(logs.Logs) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("logs after 10s: %+v", logs.Logs)
		}
		time.Sleep(10 * time.Millisecond)
		b.do(t, "GET", "/api/admin/cron/slow/logs", readSecret, "", &logs)
	}
	var starts []time.Time
	for _, r := range logs.Logs {
		at, err := time.Parse(time.RFC3339Nano, *r.StartedAt)
		must(t, err)
		starts = append(starts, at)
	}
	for i := 1; i < len(starts); i++ {
		if starts[i].After(starts[i-1]) {
			t.Fatalf("logs: row %d started at %s, after row %d (%s): want newest first by start; rows %+v",
				i, starts[i].Format(time.RFC3339Nano), i-1, starts[i-1].Format(time.RFC3339Nano), logs.Logs)
		}
	}
	if last := logs.Logs[2]; last.Result == nil || last.Result.Skipped || !last.Success {
		t.Fatalf("the run, which started first, is listed last: %+v", logs.Logs)
	}
}

// A job that will not run has no next slot: one declared disabled, and one
// paused, until it is resumed. An enabled job has one.
func TestNoNextSlotForAJobThatWillNotRun(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	next := func() map[string]*string {
		var list struct{ Jobs []jobJSON }
		if resp := b.do(t, "GET", "/api/admin/cron", readSecret, "", &list); resp.StatusCode != 200 {
			t.Fatalf("GET /api/admin/cron: %d", resp.StatusCode)
		}
		m := map[string]*string{}
		for _, j := range list.Jobs {
			m[j.Name] = j.Next
			var one jobJSON
			b.do(t, "GET", "/api/admin/cron/"+j.Name, readSecret, "", &one)
			if (one.Next == nil) != (j.Next == nil) {
				t.Fatalf("%s: next %v in the list, %v alone", j.Name, j.Next, one.Next)
			}
		}
		return m
	}
	if n := next(); n["slow"] == nil || n["quiet"] != nil {
		t.Fatalf("next: slow %v, quiet (declared disabled) %v; want a slot for slow only", n["slow"], n["quiet"])
	}
	var put jobJSON
	b.do(t, "PUT", "/api/admin/cron/slow", adminSecret, `{"enabled": false}`, &put)
	if put.Next != nil {
		t.Fatalf("PUT pausing slow answers next %v, want null", *put.Next)
	}
	if n := next(); n["slow"] != nil {
		t.Fatalf("next of paused slow: %v, want null", *n["slow"])
	}
	b.do(t, "PUT", "/api/admin/cron/quiet", adminSecret, `{"enabled": true}`, &put)
	if n := next(); n["quiet"] == nil {
		t.Fatalf("next of quiet, resumed: null, want its slot")
	}
}

// A body sent as another type than JSON is refused 415 with a message that
// says which Content-Type to send; the first curl -d, which sends a form,
// is told how to send JSON instead. POST …/run has no body and needs no
// Content-Type.
func TestUnsupportedMediaTypeSaysWhatToSend(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for _, ct := range []string{"application/x-www-form-urlencoded", "text/plain"} {
		req, err := http.NewRequest("PUT", b.srv.URL+"/api/admin/cron/slow", strings.NewReader(`{"enabled": false}`))
		must(t, err)
		req.Header.Set("Authorization", "Bearer "+adminSecret)
		req.Header.Set("Content-Type", ct)
		resp, err := b.srv.Client().Do(req)
		must(t, err)
		var e apiErr
		err = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		must(t, err)
		if resp.StatusCode != 415 || e.Code != "UNSUPPORTED_MEDIA_TYPE" || !strings.Contains(e.Message, "Content-Type: application/json") ||
			!strings.Contains(e.Message, ct) {
			t.Errorf("PUT as %s: %d %+v; want 415 naming the header to send and the type sent", ct, resp.StatusCode, e)
		}
		if form := ct == "application/x-www-form-urlencoded"; form != strings.Contains(e.Message, "curl -d") {
			t.Errorf("PUT as %s: message %q; want curl -d named for a form only", ct, e.Message)
		}
	}
	if resp := b.do(t, "POST", "/api/admin/cron/slow/run", adminSecret, "", nil); resp.StatusCode != 202 {
		t.Fatalf("POST run without a body or Content-Type: %d", resp.StatusCode)
	}
}
