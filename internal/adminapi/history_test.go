package adminapi_test

import (
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
