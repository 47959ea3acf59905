package browser

import (
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// With scripts disabled the pages still show everything: the jobs table
// with the last run and the strip of recent slots, the job page with its
// runs and chart (inline SVG, drawn by the server); an admin's buttons
// stay hidden (they would do nothing) and a notice points to the CLI.
func TestDashboardWithoutJavaScript(t *testing.T) {
	t.Parallel()
	ctx, shots := browser(t)
	r := serve(t, `jobs:
  - name: tick
    schedule: "* * * * * *"
    time_zone: America/New_York
    shell: echo tick
`)
	if _, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatal(err)
	}
	base := r.withBasic("ops", adminToken)
	// The predicates below run through DevTools, which script blocking
	// does not stop; the page's own script does not run.
	reloadUntil(t, ctx, base+"/", `document.querySelector('tr[data-name="tick"] .last-run .outcome.ok') !== null`, 30*time.Second)
	for _, check := range []string{
		`document.getElementById("controls").hidden === true`,
		`document.querySelector('tr[data-name="tick"] .actions').hidden === true`,
		`document.querySelector('tr[data-name="tick"]').textContent.includes("America/New_York")`,
		`document.querySelector('tr[data-name="tick"] .last-run').textContent.includes(" UTC")`,
		`document.querySelectorAll('tr[data-name="tick"] svg.strip rect.cell.ok').length > 0`,
		`document.querySelector("noscript") !== null`,
	} {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](check))
		if err != nil || !ok {
			t.Fatalf("without JavaScript: %s is %v (%v)", check, ok, err)
		}
	}
	screenshot(t, ctx, shots, "01-jobs-no-js")
	reloadUntil(t, ctx, base+"/job?name=tick", `document.querySelectorAll('#runs tr.run.ok').length > 0 && document.querySelectorAll('svg.chart rect.bar').length > 0`, 5*time.Second)
	screenshot(t, ctx, shots, "02-job-no-js")
}
