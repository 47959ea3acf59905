package dashboard_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cronfence/cronfence/store"
)

// keyOf reads the action key out of a page opened with set's credentials.
func keyOf(t *testing.T, b *bundle, set func(*http.Request)) string {
	t.Helper()
	_, page := b.get(t, "GET", "/", set)
	m := regexp.MustCompile(`data-key="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		return ""
	}
	return m[1]
}

// post sends an action to /act as the page's script does, then lets mut
// change the request (drop the header, another origin, other credentials).
func (b *bundle) post(t *testing.T, job, action, key string, mut func(*http.Request)) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"job": job, "action": action, "note": "from the page", "key": key})
	req, err := http.NewRequest("POST", b.srv.URL+"/act", strings.NewReader(string(body)))
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Cronfence-Action", "1")
	req.Header.Set("Origin", b.srv.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if mut != nil {
		mut(req)
	}
	resp, err := b.srv.Client().Do(req)
	must(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

// paused reports nightly's override: nil when none.
func (b *bundle) override(t *testing.T) *bool {
	t.Helper()
	states, err := b.store.JobStateList(context.Background())
	must(t, err)
	for _, s := range states {
		if s.Job == "nightly" {
			return s.EnabledOverride
		}
	}
	return nil
}

// One sign-in: the page an admin opened carries an action key, and its
// buttons act with it, as that token; nothing else authorises an action:
// not the browser's Basic credentials, not a request from another site.
func TestActWithThePagesKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := keyOf(t, b, basic(adminSecret))
	if key == "" {
		t.Fatal("an admin's page carries no action key")
	}
	refused := []struct {
		name string
		key  string
		mut  func(*http.Request)
		code string
	}{
		{"without the header", key, func(r *http.Request) { r.Header.Del("X-Cronfence-Action") }, "CROSS_SITE"},
		{"from another origin", key, func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") }, "CROSS_SITE"},
		{"from another site", key, func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") }, "CROSS_SITE"},
		{"Basic credentials without a key", "", func(r *http.Request) { r.SetBasicAuth("x", adminSecret) }, "BAD_ACTION_KEY"},
		{"a key altered", altered(key), nil, "BAD_ACTION_KEY"},
		{"a key spelled otherwise (its last character's unused bits set)", respelled(key), nil, "BAD_ACTION_KEY"},
		{"a key for another name", strings.Replace(key, ".b3Bz.", ".dmlld2Vy.", 1), nil, "BAD_ACTION_KEY"},
	}
	for _, tc := range refused {
		if code, out := b.post(t, "nightly", "pause", tc.key, tc.mut); code != 403 || out["code"] != tc.code {
			t.Errorf("%s: %d %v, want 403 %s", tc.name, code, out, tc.code)
		}
	}
	if o := b.override(t); o != nil {
		t.Fatalf("a refused action changed the job: override %v", *o)
	}
	if _, page := b.get(t, "GET", "/", basic(readSecret)); strings.Contains(page, "data-key=") {
		t.Fatal("a read token's page carries an action key")
	}

	// With the key, from the page's origin: the API's answer, as ops.
	code, out := b.post(t, "nightly", "pause", key, nil)
	if code != 200 || out["enabled"] != false {
		t.Fatalf("pause: %d %v", code, out)
	}
	if o := b.override(t); o == nil || *o {
		t.Fatal("the pause was not recorded")
	}
	if ov, _ := out["override"].(map[string]any); ov["by"] != "ops" || ov["note"] != "from the page" {
		t.Fatalf("override %v, want by ops with the note", out["override"])
	}
	if code, out = b.post(t, "nightly", "trigger", key, nil); code != 202 || out["jobId"] != "nightly" {
		t.Fatalf("trigger: %d %v", code, out)
	}
	if code, out = b.post(t, "nightly", "explode", key, nil); code != 400 {
		t.Fatalf("an unknown action: %d %v, want 400", code, out)
	}
	if code, out = b.post(t, "absent", "pause", key, nil); code != 404 || out["code"] != "CRON_JOB_NOT_FOUND" {
		t.Fatalf("an unknown job: %d %v, want the API's 404", code, out)
	}
}

// altered changes the first character of a key's signature.
func altered(key string) string {
	i := strings.LastIndex(key, ".") + 1
	c := byte('A')
	if key[i] == 'A' {
		c = 'B'
	}
	return key[:i] + string(c) + key[i+1:]
}

// respelled is the key with the unused low bits of its signature's last
// character set: the same bytes under a lenient decoder.
func respelled(key string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, key[len(key)-1])
	return key[:len(key)-1] + string(alphabet[last|0x03]) // 32 bytes: the last character's two low bits are unused
}

// The acknowledge button: the alerts table of an admin's page offers it on
// an open alert nobody acknowledged, and its action acknowledges that
// alert (by its id) as the page's token, with the note; the row then shows
// who, and no button. A read-only page offers none.
func TestActAcknowledgesTheAlertThePageShows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	res, err := b.store.AlertRaise(ctx, store.AlertRaiseParams{Kind: store.AlertFailing, Subject: "nightly", Message: "3 slots failed", RaisedBy: "r"})
	must(t, err)
	button := `data-step="ask"`
	if _, page := b.get(t, "GET", "/alerts", basic(readSecret)); strings.Contains(page, button) {
		t.Fatal("a read-only page offers the acknowledge button")
	}
	_, page := b.get(t, "GET", "/", basic(adminSecret))
	if !strings.Contains(page, button) || !strings.Contains(page, `data-alert-id="`+strconv.FormatInt(res.Alert.ID, 10)+`"`) {
		t.Fatal("an admin's page offers no acknowledge button on the open alert")
	}
	act := func(id int64) (int, map[string]any) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"action": "acknowledge", "kind": "failing", "subject": "nightly", "alertId": id,
			"note": "on it", "key": keyOf(t, b, basic(adminSecret))})
		req, err := http.NewRequest("POST", b.srv.URL+"/act", strings.NewReader(string(body)))
		must(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Cronfence-Action", "1")
		resp, err := b.srv.Client().Do(req)
		must(t, err)
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	if code, out := act(res.Alert.ID + 1); code != 404 || out["code"] != "ALERT_NOT_FOUND" {
		t.Fatalf("acknowledging another alert id: %d %v, want 404 ALERT_NOT_FOUND", code, out)
	}
	if code, out := act(res.Alert.ID); code != 200 || out["acknowledged"] != true {
		t.Fatalf("acknowledge: %d %v", code, out)
	}
	list, err := b.store.AlertList(ctx, store.AlertListParams{})
	must(t, err)
	if a := list[0]; !a.Acknowledged() || a.Ack.By != "ops" || a.Ack.Note != "on it" {
		t.Fatalf("after the action: %+v; want it acknowledged by ops, with the note", a)
	}
	_, page = b.get(t, "GET", "/alerts", basic(adminSecret))
	if strings.Contains(page, button) || !strings.Contains(page, "by <strong>ops</strong>") || !strings.Contains(page, "acknowledged") {
		t.Fatal("the acknowledged alert's row does not show who acknowledged it, or still offers the button")
	}
}
