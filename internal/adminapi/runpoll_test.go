package adminapi_test

import (
	"net/url"
	"testing"
	"time"
)

type polled struct {
	JobID  string   `json:"jobId"`
	RunID  string   `json:"runId"`
	State  string   `json:"state"`
	Run    *runJSON `json:"run"`
	Holder *struct {
		Owner      string `json:"owner"`
		Generation int64  `json:"generation"`
	} `json:"holder"`
	Code string `json:"code"`
}

// POST …/run answers the run's id and a Location to poll: running while
// the run holds its lease, then finished with its row.
func TestTriggerAnswersALocationToPoll(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	var started struct {
		RunID      string `json:"runId"`
		Generation int64  `json:"generation"`
	}
	resp := b.do(t, "POST", "/api/admin/cron/slow/run", adminSecret, "", &started)
	if resp.StatusCode != 202 || started.RunID == "" {
		t.Fatalf("POST run: %d %+v", resp.StatusCode, started)
	}
	ref, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || ref.IsAbs() {
		t.Fatalf("Location %q (%v), want a reference relative to the request", resp.Header.Get("Location"), err)
	}
	loc := resp.Request.URL.ResolveReference(ref).Path
	if want := "/api/admin/cron/slow/runs/" + started.RunID; loc != want {
		t.Fatalf("Location resolves to %s, want %s", loc, want)
	}
	<-b.started
	var p polled
	if resp := b.do(t, "GET", loc, readSecret, "", &p); resp.StatusCode != 200 || p.State != "running" || p.Run != nil ||
		p.Holder == nil || p.Holder.Generation != started.Generation || p.RunID != started.RunID {
		t.Fatalf("while it runs: %d %+v", resp.StatusCode, p)
	}
	close(b.release)
	deadline := time.Now().Add(10 * time.Second)
	for p.State != "finished" {
		if time.Now().After(deadline) {
			t.Fatalf("not finished after 10s: %+v", p)
		}
		time.Sleep(10 * time.Millisecond)
		p = polled{}
		b.do(t, "GET", loc, readSecret, "", &p)
	}
	if p.Run == nil || !p.Run.Success || p.Run.Generation != started.Generation || !p.Run.Manual {
		t.Fatalf("finished: %+v (run %+v)", p, p.Run)
	}
	// Ids that are no run of the job.
	for _, bad := range []string{"nope", "am9iOnNsb3c.999", "am9iOm90aGVy.1"} { // "job:slow" at 999; "job:other"
		var e polled
		if resp := b.do(t, "GET", "/api/admin/cron/slow/runs/"+bad, readSecret, "", &e); resp.StatusCode != 404 || e.Code != "RUN_NOT_FOUND" {
			t.Errorf("GET runs/%s: %d %+v, want 404 RUN_NOT_FOUND", bad, resp.StatusCode, e)
		}
	}
	if resp := b.do(t, "GET", "/api/admin/cron/slow/runs/x", "", "", nil); resp.StatusCode != 401 {
		t.Errorf("without a token: %d, want 401", resp.StatusCode)
	}
}
