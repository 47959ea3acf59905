package browser

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// A job that fails every third run and takes 0.1 to 0.4 s: the job page's
// strip shows each slot as its run really ended, and its chart one bar per
// finished run, failed ones marked, under the line of the 1 s interval;
// the jobs table shows the strip and the success rate; a paused job says
// so instead of a next slot.
func TestDashboardHistoryPictures(t *testing.T) {
	t.Parallel()
	ctx, shots := browser(t)
	r := serve(t, `jobs:
  - name: flaky
    schedule: "* * * * * *"
    max_attempts: 1
    shell: n=$(cat n 2>/dev/null || echo 0); echo $((n+1)) > n; sleep 0.$((n % 4 + 1)); [ $((n % 3)) -ne 2 ]
  - name: yearly
    schedule: "0 0 1 1 *"
    shell: "true"
`)
	var logs logsJSON
	deadline := time.Now().Add(60 * time.Second)
	for {
		r.api(t, "GET", "/api/admin/cron/flaky/logs?limit=100", adminToken, "", &logs)
		// Skips are no runs: on a slow host a run outlasts its second and
		// the next slot is skipped, and the chart has a bar per run only.
		ran, failed := 0, 0
		for _, run := range logs.Logs {
			if run.Result.Skipped {
				continue
			}
			ran++
			if !run.Success {
				failed++
			}
		}
		if ran >= 12 && failed >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("flaky has %d runs (%d failed) after 60s, want 12 with 2 failed", ran, failed)
		}
		time.Sleep(500 * time.Millisecond)
	}
	admin := r.withBasic("ops", adminToken)
	// Freeze what the page shows against what the API says right after.
	reloadUntil(t, ctx, admin+"/job?name=flaky&refresh=off", `document.querySelectorAll('svg.strip rect.cell').length >= 10`, 10*time.Second)
	cells := stripCells(t, ctx)
	bars, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('svg.chart rect.bar')).map(function (b) {
		return b.getAttribute("class") + "|" + b.querySelector("title").textContent + "|" + b.getAttribute("height"); })`))
	if err != nil {
		t.Fatal(err)
	}
	line, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('svg.chart line.interval').length`))
	if err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, shots, "01-job-history")
	r.api(t, "GET", "/api/admin/cron/flaky/logs?limit=100", adminToken, "", &logs)

	// Each cell that ended is its slot's run as the API has it.
	bySlot := map[string]runJSON{}
	var finished []runJSON // newest first
	for _, run := range logs.Logs {
		if run.Slot == nil || run.Result.Skipped {
			continue
		}
		bySlot[slotTitle(*run.Slot)] = run
		if run.FinishedAt != nil {
			finished = append(finished, run)
		}
	}
	checked := map[string]int{}
	for _, c := range cells {
		class, title, _ := strings.Cut(c, "|")
		state := strings.TrimPrefix(class, "cell ")
		slot, _, _ := strings.Cut(title, ": ")
		if state != "ok" && state != "failed" {
			continue
		}
		run, ok := bySlot[slot]
		if !ok {
			t.Errorf("cell %q: the API has no run of slot %s", c, slot)
			continue
		}
		if want := map[bool]string{true: "ok", false: "failed"}[run.Success]; state != want {
			t.Errorf("cell of slot %s is %s, the API's run %s", slot, state, want)
		}
		checked[state]++
	}
	if checked["ok"] < 5 || checked["failed"] < 2 {
		t.Errorf("checked %v cells; want at least 5 ok and 2 failed: %v", checked, cells)
	}

	// One bar per finished run, oldest on the left, failed ones marked.
	if len(bars) < 10 || len(bars) > 30 {
		t.Fatalf("%d bars, want one per finished run shown (10 to 30): %v", len(bars), bars)
	}
	prev := ""
	for i, b := range bars {
		f := strings.Split(b, "|")
		slot, _, _ := strings.Cut(f[1], ": ")
		run, ok := bySlot[slot]
		if !ok || run.FinishedAt == nil {
			t.Errorf("bar %d (%q): the API has no finished run of slot %s", i, b, slot)
			continue
		}
		if want := map[bool]string{true: "bar ok", false: "bar failed"}[run.Success]; f[0] != want {
			t.Errorf("bar %d (slot %s) is %q, the API's run %q", i, slot, f[0], want)
		}
		if slot <= prev {
			t.Errorf("bar %d's slot %s is not after the bar before's, %s", i, slot, prev)
		}
		prev = slot
	}
	if len(finished) < len(bars) {
		t.Errorf("%d bars for %d finished runs", len(bars), len(finished))
	}
	if line != 1 {
		t.Errorf("%d interval lines, want the 1s interval drawn", line)
	}

	// The jobs table: each job's strip and success rate; a paused job says
	// paused, by whom, instead of a next slot.
	if code := r.api(t, "PUT", "/api/admin/cron/yearly", adminToken, `{"enabled":false}`, nil); code != 200 {
		t.Fatalf("pausing yearly: %d", code)
	}
	reloadUntil(t, ctx, admin+"/?refresh=off", `document.querySelector('tr[data-name="flaky"] svg.strip') !== null`, 10*time.Second)
	rate := waitText(t, ctx, `tr[data-name="flaky"] .rate`, " ok", 5*time.Second)
	var ok, ended int
	if _, err := fmt.Sscanf(rate, "%d of %d ok", &ok, &ended); err != nil || ok >= ended || ok == 0 {
		t.Errorf("flaky's rate %q, want some but not all of its slots ok", rate)
	}
	waitText(t, ctx, `tr[data-name="yearly"] .next`, "paused by ops", 5*time.Second)
	screenshot(t, ctx, shots, "02-jobs")
}

// A job paused for a few of its slots and resumed: the slots due while it
// was paused are settled skipped by the store, and the dashboard draws
// them paused (grey), not missed (red "no run"), and leaves them out of
// the success rate, on the job page and in the jobs table; the runs table
// lists each as a skip with reason paused, as the API's logs do.
func TestDashboardDrawsSlotsSkippedWhilePausedAsPaused(t *testing.T) {
	t.Parallel()
	ctx, shots := browser(t)
	r := serve(t, `jobs:
  - name: tick
    schedule: "* * * * * *"
    shell: "true"
`)
	var logs logsJSON
	count := func() (ok, paused int) {
		r.api(t, "GET", "/api/admin/cron/tick/logs?limit=100", adminToken, "", &logs)
		for _, run := range logs.Logs {
			switch {
			case run.Result.Skipped && run.Result.Reason == "paused":
				paused++
			case run.Success && !run.Result.Skipped:
				ok++
			}
		}
		return ok, paused
	}
	waitFor := func(what string, cond func(ok, paused int) bool) (int, int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			ok, paused := count()
			if cond(ok, paused) {
				return ok, paused
			}
			if time.Now().After(deadline) {
				t.Fatalf("after 30s: %s; tick has %d ok runs and %d paused skips", what, ok, paused)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	waitFor("two runs", func(ok, _ int) bool { return ok >= 2 })
	if code := r.api(t, "PUT", "/api/admin/cron/tick", adminToken, `{"enabled":false,"note":"test"}`, nil); code != 200 {
		t.Fatalf("pausing tick: %d", code)
	}
	okBefore, _ := waitFor("three slots skipped while paused", func(_, paused int) bool { return paused >= 3 })
	if code := r.api(t, "PUT", "/api/admin/cron/tick", adminToken, `{"enabled":null}`, nil); code != 200 {
		t.Fatalf("resuming tick: %d", code)
	}
	waitFor("two runs after the resume", func(ok, _ int) bool { return ok >= okBefore+2 })

	admin := r.withBasic("ops", adminToken)
	reloadUntil(t, ctx, admin+"/job?name=tick&refresh=off", `document.querySelectorAll('svg.strip rect.cell.paused').length >= 3`, 10*time.Second)
	cells := stripCells(t, ctx)
	rate, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('td.recent .rate').textContent`))
	if err != nil {
		t.Fatal(err)
	}
	skips, err := chromedp.Run(ctx, chromedp.Evaluate[int](`Array.from(document.querySelectorAll('#runs tr.run.skipped .detail')).filter(function (d) {
		return d.textContent === "paused"; }).length`))
	if err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, shots, "01-job-paused-slots")

	// Each paused cell is a slot the API lists as skipped while paused;
	// no cell is missed; the rate counts the ok cells only.
	pausedSlots := map[string]bool{}
	for _, run := range logs.Logs {
		if run.Slot != nil && run.Result.Skipped && run.Result.Reason == "paused" {
			pausedSlots[slotTitle(*run.Slot)] = true
		}
	}
	states := map[string]int{}
	for _, c := range cells {
		class, title, _ := strings.Cut(c, "|")
		state := strings.TrimPrefix(class, "cell ")
		states[state]++
		slot, _, _ := strings.Cut(title, ": ")
		if state == "paused" && !pausedSlots[slot] {
			t.Errorf("cell %q is paused, but the API has no paused skip of slot %s", c, slot)
		}
		if state == "missed" || state == "failed" {
			t.Errorf("cell %q: want no slot missed or failed", c)
		}
	}
	if states["paused"] < 3 || states["ok"] < 2 {
		t.Errorf("cells %v; want at least 3 paused and 2 ok: %v", states, cells)
	}
	if want := fmt.Sprintf("%d of %d ok", states["ok"], states["ok"]); rate != want {
		t.Errorf("job page's rate %q, want %q: paused slots count neither way", rate, want)
	}
	if skips < 3 {
		t.Errorf("the runs table lists %d skips with reason paused, want at least 3", skips)
	}

	// The jobs table: every ok, none missed, whatever the pause.
	reloadUntil(t, ctx, admin+"/?refresh=off", `document.querySelector('tr[data-name="tick"] svg.strip rect.cell.paused') !== null`, 10*time.Second)
	rate = waitText(t, ctx, `tr[data-name="tick"] .rate`, " ok", 5*time.Second)
	var ok, ended int
	if _, err := fmt.Sscanf(rate, "%d of %d ok", &ok, &ended); err != nil || ok != ended || ok == 0 {
		t.Errorf("jobs table's rate of tick %q, want every slot that ran ok and the paused ones left out", rate)
	}
	screenshot(t, ctx, shots, "02-jobs-paused-slots")
}

// stripCells returns the cells of the page's strip of recent slots, each
// as its class and its title: "cell ok|2026-03-01 12:00:00 UTC: …".
func stripCells(t *testing.T, ctx context.Context) []string {
	t.Helper()
	cells, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('svg.strip rect.cell')).map(function (c) {
		return c.getAttribute("class") + "|" + c.querySelector("title").textContent; })`))
	if err != nil {
		t.Fatal(err)
	}
	return cells
}

// slotTitle is the slot a cell's title names, of a run's RFC 3339 slot.
func slotTitle(slot string) string {
	at, _ := time.Parse(time.RFC3339Nano, slot)
	return at.UTC().Format("2006-01-02 15:04:05 MST")
}
