package browser

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// backfillJSON is a backfill as the API answers it, as far as this test
// reads it.
type backfillJSON struct {
	ID          int64  `json:"id"`
	State       string `json:"state"`
	Total       int    `json:"total"`
	CancelledBy string `json:"cancelledBy"`
}

// An admin reads a dry run of a backfill from the job's page, asks for
// one (it runs: the replica drives it to the end and the page shows it
// done), then cancels a second, slow one with the Cancel button's two
// steps: the API shows it cancelled by the admin, and the row loses its
// button.
func TestDashboardBackfills(t *testing.T) {
	t.Parallel()
	ctx, shots := browser(t)
	r := serve(t, `jobs:
  - name: hourly
    schedule: "0 * * * *"
    shell: "true"
`)
	admin := r.withBasic("ops", adminToken)
	page := admin + "/job?name=hourly&refresh=off"
	reloadUntil(t, ctx, page, `document.querySelector('form.backfill-form') !== null && !document.querySelector('form.backfill-form').hidden`, 20*time.Second)
	from := time.Now().UTC().Truncate(time.Hour).Add(-6 * time.Hour)
	to := from.Add(3 * time.Hour)

	// A dry run: three slots to run, shown below the form, nothing kept.
	for _, a := range []chromedp.Action[chromedp.Void]{
		chromedp.SendKeys(chromedp.CSS(`form.backfill-form input[name="from"]`), from.Format(time.RFC3339)),
		chromedp.SendKeys(chromedp.CSS(`form.backfill-form input[name="to"]`), to.Format(time.RFC3339)),
		chromedp.Click(chromedp.CSS(`form.backfill-form button[data-submit="plan"]`)),
	} {
		if err := chromedp.Do(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	waitText(t, ctx, "#backfill-plan", "3 slot(s): run 3", 10*time.Second)
	screenshot(t, ctx, shots, "01-dry-run")
	var list struct {
		Backfills []backfillJSON `json:"backfills"`
	}
	if code := r.api(t, "GET", "/api/admin/cron/hourly/backfills", readToken, "", &list); code != 200 || len(list.Backfills) != 0 {
		t.Fatalf("after the dry run: %d %+v; want no backfill", code, list)
	}

	// Asked for: the page reloads with it, and the replica runs it.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`form.backfill-form button[data-submit="create"]`))); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#flash", "Asked for backfill", 10*time.Second) // the page reloaded itself
	reloadUntil(t, ctx, page, `document.querySelector('tr.backfill.done') !== null`, 30*time.Second)
	waitText(t, ctx, "tr.backfill.done td.counts", "ran 3", 5*time.Second)
	screenshot(t, ctx, shots, "02-done")

	// A slow one, cancelled from the page.
	var slow backfillJSON
	body := fmt.Sprintf(`{"from":%q,"to":%q,"rate":1}`, from.Add(-24*time.Hour).Format(time.RFC3339), from.Format(time.RFC3339))
	if code := r.api(t, "POST", "/api/admin/cron/hourly/backfills", adminToken, body, &slow); code != 201 {
		t.Fatalf("POST a slow backfill: %d %+v", code, slow)
	}
	ask := fmt.Sprintf(`tr.backfill[data-backfill-id="%d"] button[data-step="ask"]`, slow.ID)
	confirm := fmt.Sprintf(`tr.backfill[data-backfill-id="%d"] button[data-step="confirm"]`, slow.ID)
	reloadUntil(t, ctx, page, `(function(){ var b = document.querySelector('`+ask+`'); return b !== null && b.offsetParent !== null; })()`, 10*time.Second)
	for _, sel := range []string{ask, confirm} {
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
			t.Fatal(err)
		}
	}
	waitText(t, ctx, "#flash", fmt.Sprintf("Cancelled backfill %d of hourly as ops", slow.ID), 10*time.Second)
	waitText(t, ctx, fmt.Sprintf(`tr.backfill[data-backfill-id="%d"]`, slow.ID), "cancelled by ops", 5*time.Second)
	screenshot(t, ctx, shots, "03-cancelled")
	var got backfillJSON
	if code := r.api(t, "GET", fmt.Sprintf("/api/admin/cron/hourly/backfills/%d", slow.ID), readToken, "", &got); code != 200 ||
		got.State != "cancelled" || got.CancelledBy != "ops" {
		t.Fatalf("the API shows %d %+v; want cancelled by ops", code, got)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll('tr.backfill[data-backfill-id="%d"] button').length`, slow.ID))); err != nil || n != 0 {
		t.Fatalf("%d buttons (%v) left on the cancelled backfill, want none", n, err)
	}
}
