package dashboard_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/store"
)

// backfillBundle is setup's with two backfills of nightly: done (ran
// and failed slots, one skipped, driven by replica-9) and, newer, running
// (one slot ran, one taken, driven by replica-1). Nothing drives them:
// the scheduler has no timers.
type backfillBundle struct {
	*bundle
	done, running store.Backfill
}

func setupBackfills(t *testing.T) *backfillBundle {
	t.Helper()
	b := setup(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Hour)
	day := 24 * time.Hour
	done, err := b.sched.Backfill(ctx, "nightly", cronfence.BackfillParams{From: now.Add(-10 * day), To: now.Add(-5 * day), By: "alice"})
	must(t, err)
	counts := store.BackfillCounts{Ran: done.Total - 2, Failed: 1, Skipped: 1}
	done, wrote, err := b.store.BackfillProgress(ctx, store.BackfillProgressParams{ID: done.ID, Cursor: done.To.Add(-time.Hour),
		Counts: counts, Driver: "replica-9", Done: true})
	must(t, err)
	if !wrote || done.State != store.BackfillDone {
		t.Fatalf("the first backfill was not ended: %+v", done)
	}
	running, err := b.sched.Backfill(ctx, "nightly", cronfence.BackfillParams{From: now.Add(-4 * day), To: now.Add(-day),
		IncludeFailed: true, Rate: 5, By: "bob"})
	must(t, err)
	running, _, err = b.store.BackfillProgress(ctx, store.BackfillProgressParams{ID: running.ID, Cursor: running.From.Add(day),
		Counts: store.BackfillCounts{Ran: 1, Taken: 1}, Driver: "replica-1"})
	must(t, err)
	return &backfillBundle{bundle: b, done: done, running: running}
}

// backfillRows returns the rows of a job page's backfills table, by ID,
// and the IDs in the order shown.
func backfillRows(t *testing.T, page string) (map[int64]string, []int64) {
	t.Helper()
	start := strings.Index(page, `<table class="backfills"`)
	if start < 0 {
		t.Fatalf("the page has no backfills table:\n%s", page)
	}
	table := page[start : start+strings.Index(page[start:], "</table>")]
	rows := map[int64]string{}
	var order []int64
	for _, row := range strings.Split(table, `<tr class="backfill `)[1:] {
		const attr = `data-backfill-id="`
		i := strings.Index(row, attr) + len(attr)
		id, err := strconv.ParseInt(row[i:i+strings.IndexByte(row[i:], '"')], 10, 64)
		must(t, err)
		rows[id] = row[:strings.Index(row, "</tr>")]
		order = append(order, id)
	}
	return rows, order
}

// A job's page lists its backfills newest first, each with its state,
// range, progress (a <progress> and the numbers), ran and failed, the
// other counts that are not zero, who asked and the driver; the running
// one has a Cancel button on an admin's page, and on no read token's.
func TestJobPageShowsBackfills(t *testing.T) {
	t.Parallel()
	b := setupBackfills(t)
	done, running := b.done, b.running

	resp, page := b.get(t, "GET", "/job?name=nightly&refresh=off", basic(adminSecret))
	if resp.StatusCode != 200 {
		t.Fatalf("job page: %d\n%s", resp.StatusCode, page)
	}
	rows, order := backfillRows(t, page)
	if len(order) != 2 || order[0] != running.ID || order[1] != done.ID {
		t.Fatalf("backfills shown %v, want [%d %d] (newest first)", order, running.ID, done.ID)
	}
	lisbon, err := time.LoadLocation("Europe/Lisbon")
	must(t, err)
	wants := map[int64][]string{
		done.ID: {
			`<span class="backfill-state done">done</span>`,
			`<time datetime="` + done.From.UTC().Format(time.RFC3339Nano) + `">` + done.From.In(lisbon).Format("2006-01-02 15:04:05 MST"),
			`<time datetime="` + done.To.UTC().Format(time.RFC3339Nano) + `">`,
			`<progress value="` + strconv.Itoa(done.Total) + `" max="` + strconv.Itoa(done.Total) + `">100%</progress>`,
			strconv.Itoa(done.Total) + ` / ` + strconv.Itoa(done.Total),
			`ran ` + strconv.Itoa(done.Total-2) + `</span>`, `failed 1</span>`,
			`<small class="others">skipped 1</small>`,
			`by <strong>alice</strong>`, `<code>replica-9</code>`, `ended `,
		},
		running.ID: {
			`<span class="backfill-state running">running</span>`, `failed slots too`, `at most 5/s`,
			`<progress value="2" max="` + strconv.Itoa(running.Total) + `">`,
			`2 / ` + strconv.Itoa(running.Total),
			`ran 1</span>`, `failed 0</span>`,
			`<small class="others">taken 1</small>`,
			`by <strong>bob</strong>`, `<code>replica-1</code>`,
			`<div class="backfill-actions" data-job="nightly" data-backfill-id="` + strconv.FormatInt(running.ID, 10) + `" hidden>`,
			`<button type="button" data-step="ask">Cancel</button>`,
		},
	}
	for id, want := range wants {
		for _, w := range want {
			if !strings.Contains(rows[id], w) {
				t.Errorf("backfill %d's row lacks %q:\n%s", id, w, rows[id])
			}
		}
	}
	if strings.Contains(rows[done.ID], "backfill-actions") {
		t.Errorf("the done backfill offers a Cancel button:\n%s", rows[done.ID])
	}
	if strings.Contains(rows[running.ID], "ended ") {
		t.Errorf("the running backfill is shown ended:\n%s", rows[running.ID])
	}
	for _, zero := range []string{"paused 0", "excluded 0", "completed before 0", "taken 0"} {
		if strings.Contains(page, zero) {
			t.Errorf("the page shows a zero count %q", zero)
		}
	}

	// A read token sees the same backfills, and no button.
	_, page = b.get(t, "GET", "/job?name=nightly&refresh=off", basic(readSecret))
	if rows, order := backfillRows(t, page); len(order) != 2 || !strings.Contains(rows[running.ID], "ran 1</span>") {
		t.Fatalf("a read token's page shows backfills %v:\n%s", order, page)
	}
	if strings.Contains(page, "backfill-actions") {
		t.Fatal("a read token's page offers the Cancel button")
	}

	// A job without a backfill: a hint, the name escaped.
	_, page = b.get(t, "GET", "/job?name="+url.QueryEscape(hostile)+"&refresh=off", basic(adminSecret))
	if strings.Contains(page, `<table class="backfills"`) ||
		!strings.Contains(page, `No backfill. Ask for one with <code>cronfence backfill `+html.EscapeString(hostile)) {
		t.Fatalf("a job without backfills:\n%s", page)
	}
}

// The Cancel button's action cancels the backfill as the page's token;
// a second answers 409 BACKFILL_ENDED with a message that says so; a
// read token (no action key) is refused and changes nothing; a backfill
// of another job is not found.
func TestActCancelsABackfill(t *testing.T) {
	t.Parallel()
	b := setupBackfills(t)
	ctx := context.Background()
	id := b.running.ID
	cancel := func(job string, id int64, key string, mut func(*http.Request)) (int, map[string]any) {
		t.Helper()
		return b.postActWith(t, map[string]any{"action": "backfill-cancel", "job": job, "backfillId": id, "key": key}, mut)
	}
	stateOf := func() store.Backfill {
		t.Helper()
		got, err := b.sched.GetBackfill(ctx, id)
		must(t, err)
		return got
	}

	if code, out := cancel("nightly", id, keyOf(t, b.bundle, basic(readSecret)), func(r *http.Request) { r.SetBasicAuth("x", readSecret) }); code != 403 || out["code"] != "BAD_ACTION_KEY" {
		t.Fatalf("a read token's cancel: %d %v, want 403 BAD_ACTION_KEY", code, out)
	}
	if got := stateOf(); got.State != store.BackfillRunning {
		t.Fatalf("a refused cancel changed the backfill: %+v", got)
	}
	key := keyOf(t, b.bundle, basic(adminSecret))
	if code, out := cancel("nightly", 0, key, nil); code != 400 || out["code"] != "MALFORMED_BODY" {
		t.Fatalf("a cancel without the ID: %d %v, want 400", code, out)
	}
	if code, out := cancel(hostile, id, key, nil); code != 404 || out["code"] != "BACKFILL_NOT_FOUND" {
		t.Fatalf("a cancel of nightly's backfill as another job's: %d %v, want 404 BACKFILL_NOT_FOUND", code, out)
	}
	if code, out := cancel("nightly", id, key, nil); code != 200 || out["state"] != "cancelled" || out["cancelledBy"] != "ops" {
		t.Fatalf("cancel: %d %v, want 200, cancelled by ops", code, out)
	}
	if got := stateOf(); got.State != store.BackfillCancelled || got.CancelledBy != "ops" {
		t.Fatalf("after the cancel: %+v, want cancelled by ops", got)
	}
	code, out := cancel("nightly", id, key, nil)
	if msg, _ := out["message"].(string); code != 409 || out["code"] != "BACKFILL_ENDED" || !strings.Contains(msg, "cancelled already") {
		t.Fatalf("a second cancel: %d %v, want 409 BACKFILL_ENDED saying it is cancelled already", code, out)
	}
	if details, _ := out["details"].(map[string]any); details["state"] != "cancelled" {
		t.Fatalf("a second cancel's details %v, want the backfill, cancelled", out["details"])
	}

	_, page := b.get(t, "GET", "/job?name=nightly&refresh=off", basic(adminSecret))
	rows, _ := backfillRows(t, page)
	if row := rows[id]; !strings.Contains(row, `<span class="backfill-state cancelled">cancelled</span>`) ||
		!strings.Contains(row, "cancelled by <strong>ops</strong>") || strings.Contains(row, "backfill-actions") {
		t.Fatalf("the cancelled backfill's row:\n%s", row)
	}
}

// postActWith sends an action to /act as the page's script does, then
// lets mut (when not nil) change the request: other credentials.
func (b *bundle) postActWith(t *testing.T, payload map[string]any, mut func(*http.Request)) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(payload)
	req, err := http.NewRequest("POST", b.srv.URL+"/act", strings.NewReader(string(body)))
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Cronfence-Action", "1")
	req.Header.Set("Origin", b.srv.URL)
	if mut != nil {
		mut(req)
	}
	resp, err := b.srv.Client().Do(req)
	must(t, err)
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// The backfill form: on an admin's page only; its dry run answers the
// plan and records nothing, its create records the backfill as the page's
// token, and a second while that one runs is refused naming it.
func TestActAsksForABackfill(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	if _, page := b.get(t, "GET", "/job?name=nightly&refresh=off", basic(readSecret)); strings.Contains(page, "backfill-form") {
		t.Fatal("a read token's page offers the backfill form")
	}
	if _, page := b.get(t, "GET", "/job?name=nightly&refresh=off", basic(adminSecret)); !strings.Contains(page, `<form class="backfill-form" data-job="nightly" hidden>`) {
		t.Fatalf("an admin's page has no backfill form:\n%s", page)
	}
	key := keyOf(t, b, basic(adminSecret))
	// Two days of January (no daylight saving change): two slots.
	from, to := "2025-01-10T00:00:00Z", "2025-01-12T00:00:00Z"
	ask := func(dryRun bool, key string) (int, map[string]any) {
		t.Helper()
		return b.postActWith(t, map[string]any{"action": "backfill-create", "job": "nightly", "key": key,
			"backfill": map[string]any{"from": from, "to": to, "includeFailed": true, "rate": 2, "dryRun": dryRun}}, nil)
	}

	code, out := ask(true, key)
	if slots, _ := out["slots"].([]any); code != 200 || len(slots) != 2 {
		t.Fatalf("dry run: %d %v, want 200 and the plan of 2 slots", code, out)
	} else if s, _ := slots[0].(map[string]any); s["outcome"] != cronfence.BackfillRun {
		t.Fatalf("dry run's first slot %v, want outcome run", s)
	}
	list, err := b.sched.Backfills(ctx, store.BackfillListParams{Job: "nightly"})
	must(t, err)
	if len(list) != 0 {
		t.Fatalf("a dry run recorded %+v", list)
	}
	if code, out := ask(false, ""); code != 403 || out["code"] != "BAD_ACTION_KEY" {
		t.Fatalf("without a key: %d %v, want 403 BAD_ACTION_KEY", code, out)
	}
	if code, out := b.postActWith(t, map[string]any{"action": "backfill-create", "job": "nightly", "key": key}, nil); code != 400 {
		t.Fatalf("without settings: %d %v, want 400", code, out)
	}
	code, out = ask(false, key)
	if code != 201 || out["state"] != "running" || out["createdBy"] != "ops" || out["total"] != float64(2) || out["rate"] != float64(2) {
		t.Fatalf("create: %d %v, want 201, running, by ops, 2 slots at rate 2", code, out)
	}
	if code, out := ask(false, key); code != 409 || out["code"] != "BACKFILL_CONFLICT" {
		t.Fatalf("a second while the first runs: %d %v, want 409 BACKFILL_CONFLICT", code, out)
	}
	if _, page := b.get(t, "GET", "/job?name=nightly&refresh=off", basic(adminSecret)); !strings.Contains(page, "by <strong>ops</strong>") {
		t.Fatalf("the page does not show the backfill asked for:\n%s", page)
	}
}
