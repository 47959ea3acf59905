package browser

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// alertsJSON is GET /api/admin/cron/alerts's answer, as far as this test
// reads it.
type alertsJSON struct {
	Alerts []struct {
		ID           int64  `json:"id"`
		Kind         string `json:"kind"`
		Subject      string `json:"subject"`
		Open         bool   `json:"open"`
		Acknowledged bool   `json:"acknowledged"`
		Ack          *struct {
			By   string `json:"by"`
			Note string `json:"note"`
		} `json:"ack"`
	} `json:"alerts"`
}

// A job that fails every run (every 5 seconds: far from slow_run on a
// loaded machine) raises failing, and cronfence check exits 1.
// An admin acknowledges it from the dashboard: the button asks for a
// confirmation (cancelling it changes nothing), the confirmed
// acknowledgement is recorded as the admin with the note typed, the row
// shows who, and check exits 0 while the alert stays open.
func TestDashboardAcknowledgesAnAlert(t *testing.T) {
	t.Parallel()
	ctx, shots := browser(t)
	r := serve(t, `monitor:
  heartbeat_every: 1s
  check_every: 1s
  failing_slots: 1
jobs:
  - name: broken
    schedule: "*/5 * * * * *"
    shell: exit 3
`)
	check := func() (int, string) {
		t.Helper()
		out, err := exec.Command(r.bin, "check", "--config", r.config).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	acked := func() (bool, string, string) {
		t.Helper()
		var list alertsJSON
		if code := r.api(t, "GET", "/api/admin/cron/alerts?open=true&kind=failing", readToken, "", &list); code != 200 || len(list.Alerts) != 1 {
			t.Fatalf("GET alerts: %d %+v; want the failing alert open", code, list)
		}
		a := list.Alerts[0]
		if a.Ack == nil {
			return a.Acknowledged, "", ""
		}
		return a.Acknowledged, a.Ack.By, a.Ack.Note
	}

	admin := r.withBasic("ops", adminToken)
	ask := `tr.alert.open[data-kind="failing"][data-subject="broken"] button[data-step="ask"]`
	reloadUntil(t, ctx, admin+"/?refresh=off", `(function(){ var b = document.querySelector('`+ask+`'); return b !== null && b.offsetParent !== null; })()`, 60*time.Second)
	if code, out := check(); code != 1 || !strings.Contains(out, "failing\tbroken\t") {
		t.Fatalf("check before the acknowledgement: exit %d, %q; want 1 naming the failing alert", code, out)
	}
	screenshot(t, ctx, shots, "01-failing")

	// The button asks first; Cancel leaves the alert as it was.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(ask))); err != nil {
		t.Fatal(err)
	}
	confirm := `tr.alert[data-kind="failing"] button[data-step="confirm"]`
	visible := func(sel string) bool {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(function(){ var b = document.querySelector('`+sel+`'); return b !== null && !b.hidden; })()`))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if !visible(confirm) || visible(ask) {
		t.Fatal("the acknowledge button did not ask for a confirmation")
	}
	screenshot(t, ctx, shots, "02-confirm")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`tr.alert[data-kind="failing"] button[data-step="cancel"]`))); err != nil {
		t.Fatal(err)
	}
	if visible(confirm) || !visible(ask) {
		t.Fatal("Cancel did not put the acknowledge button back")
	}
	if ok, by, _ := acked(); ok || by != "" {
		t.Fatalf("after Cancel the alert is acknowledged by %q", by)
	}

	// Asked and confirmed, with a note.
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("note"), "the script is being fixed")); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(ask))); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(confirm))); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#flash", "Acknowledged failing of broken as ops", 10*time.Second)
	row := waitText(t, ctx, `tr.alert[data-kind="failing"] td.ack`, "by ops", 5*time.Second)
	if !strings.Contains(row, "the script is being fixed") {
		t.Fatalf("the row's acknowledgement reads %q, want the note", row)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('tr.alert[data-kind="failing"] button').length`)); err != nil || n != 0 {
		t.Fatalf("%d buttons (%v) left on the acknowledged alert, want none", n, err)
	}
	screenshot(t, ctx, shots, "03-acknowledged")
	if ok, by, note := acked(); !ok || by != "ops" || note != "the script is being fixed" {
		t.Fatalf("the API shows acknowledged %v by %q (%q); want by ops, with the note", ok, by, note)
	}
	// Still failing, still open, but known: check is green.
	if code, out := check(); code != 0 || !strings.Contains(out, "1 acknowledged") {
		t.Fatalf("check after the acknowledgement: exit %d, %q; want 0 and the acknowledged alert counted apart", code, out)
	}
}
