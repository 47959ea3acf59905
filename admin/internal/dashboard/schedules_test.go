package dashboard_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/cronfence/cronfence"
)

// postAct sends an action to /act as the page's script does.
func (b *bundle) postAct(t *testing.T, payload map[string]any) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(payload)
	req, err := http.NewRequest("POST", b.srv.URL+"/act", strings.NewReader(string(body)))
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Cronfence-Action", "1")
	req.Header.Set("Origin", b.srv.URL)
	resp, err := b.srv.Client().Do(req)
	must(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

// The schedules pages: an admin's page carries the create form, the
// create, the edit (with the version read: a stale one is refused with
// the current version) and the delete go through /act to the API, and
// each change is listed with who made it. A read token's page has no
// form, and its key-less actions are refused.
func TestSchedulesPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	must(t, b.sched.RegisterKind("report", func(context.Context, *cronfence.Run) error { return nil }))

	resp, page := b.get(t, "GET", "/schedules", basic(adminSecret))
	if resp.StatusCode != 200 || !strings.Contains(page, `class="schedule-form" data-mode="create"`) || !strings.Contains(page, "No stored schedule.") {
		t.Fatalf("/schedules for an admin: %d\n%s", resp.StatusCode, page)
	}
	wantSecureHeaders(t, resp)
	key := regexp.MustCompile(`data-key="([^"]+)"`).FindStringSubmatch(page)[1]
	if _, page := b.get(t, "GET", "/schedules", basic(readSecret)); strings.Contains(page, "schedule-form") || strings.Contains(page, "data-key") {
		t.Fatalf("/schedules for a read token shows the form:\n%s", page)
	}

	create := map[string]any{"action": "schedule-create", "key": key, "schedule": map[string]any{
		"name": "tenant-42", "spec": "0 6 * * *", "kind": "report", "args": map[string]any{"tenant": 42}, "catchUpWindow": "90s",
		"catchUp": "all", "maxCatchUp": 7, "jitter": "2h"}}
	if code, out := b.postAct(t, create); code != 201 || out["version"] != float64(1) {
		t.Fatalf("create: %d %v", code, out)
	}
	if code, out := b.postAct(t, map[string]any{"action": "schedule-create", "key": key, "schedule": map[string]any{"name": "bad", "spec": "61 * * * *", "kind": "report"}}); code != 400 || !strings.Contains(out["message"].(string), "61") {
		t.Fatalf("create with a bad spec: %d %v", code, out)
	}
	delete(create, "key")
	if code, _ := b.postAct(t, create); code != 403 {
		t.Fatalf("create without the key: %d", code)
	}

	_, page = b.get(t, "GET", "/schedule?name=tenant-42", basic(adminSecret))
	for _, want := range []string{`data-mode="update" data-name="tenant-42"`, `name="version" value="1"`, `value="0 6 * * *"`, `{&#34;tenant&#34;:42}`, `value="1m30s"`, `<option selected>all</option>`, `name="maxCatchUp" type="number" min="0" max="10000" placeholder="100 (with all)" value="7"`,
		"catch-up all within 1m30s, 7 slots back", "jitter 2h0m0s", `name="jitter" placeholder="none" value="2h0m0s"`, `data-version="1"`, "Confirm: delete tenant-42"} {
		if !strings.Contains(page, want) {
			t.Errorf("/schedule: no %q in\n%s", want, page)
		}
	}

	update := func(version int) (int, map[string]any) {
		return b.postAct(t, map[string]any{"action": "schedule-update", "job": "tenant-42", "key": key,
			"schedule": map[string]any{"version": version, "spec": "0 7 * * *", "kind": "report"}})
	}
	if code, out := update(1); code != 200 || out["version"] != float64(2) {
		t.Fatalf("update: %d %v", code, out)
	}
	if code, out := update(1); code != 409 || out["code"] != "SCHEDULE_CONFLICT" || out["details"].(map[string]any)["currentVersion"] != float64(2) {
		t.Fatalf("update of a stale version: %d %v", code, out)
	}
	if code, _ := b.postAct(t, map[string]any{"action": "schedule-delete", "job": "tenant-42", "version": 1, "key": key}); code != 409 {
		t.Fatalf("delete of a stale version: %d", code)
	}
	if code, _ := b.postAct(t, map[string]any{"action": "schedule-delete", "job": "tenant-42", "version": 2, "key": key}); code != 200 {
		t.Fatalf("delete: %d", code)
	}
	if resp, _ := b.get(t, "GET", "/schedule?name=tenant-42", basic(adminSecret)); resp.StatusCode != 404 {
		t.Fatalf("/schedule of a deleted schedule: %d", resp.StatusCode)
	}
	_, page = b.get(t, "GET", "/schedules", basic(readSecret))
	for _, want := range []string{"spec 0 6 * * * → 0 7 * * *", "created: kind report", "deleted", "<td>ops</td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("/schedules changes: no %q in\n%s", want, page)
		}
	}
}

// A job named "schedules" is paused from its page as any other: the
// action reaches the job, not the schedules' endpoint.
func TestActOnAJobNamedSchedules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	must(t, b.sched.Register(cronfence.Job{Name: "schedules", Schedule: "@daily", Handler: func(context.Context, *cronfence.Run) error { return nil }}))
	key := keyOf(t, b, basic(adminSecret))
	if code, out := b.post(t, "schedules", "pause", key, nil); code != 200 || out["name"] != "schedules" || out["enabled"] != false {
		t.Fatalf("pause schedules: %d %v", code, out)
	}
}
