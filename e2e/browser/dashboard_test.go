package browser

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browser starts headless Chromium with a fresh profile and returns a tab,
// and the directory its screenshots go to (artifacts).
func browser(t *testing.T) (ctx context.Context, shots string) {
	t.Helper()
	needChromium(t)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc()
	})
	// Start the browser now, so a missing library fails here, clearly.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting %s: %v", chromiumPath, err)
	}
	return ctx, artifacts(t)
}

// screenshot saves the whole page as dir/name.png.
func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("saved %s", path)
}

// reloadUntil loads url until the JavaScript predicate is true, within
// timeout. The dashboard is server-rendered: fresh state needs a reload.
func reloadUntil(t *testing.T, ctx context.Context, url, predicate string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
			t.Fatalf("navigate %s: %v", url, err)
		}
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](predicate))
		if err != nil {
			t.Fatalf("evaluate %s: %v", predicate, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
			t.Fatalf("%s: %s still false after %s; the page says:\n%s", url, predicate, timeout, body)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitText waits until the element's text contains want and returns it.
func waitText(t *testing.T, ctx context.Context, sel, want string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		text, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(
			`(function(){ var e = document.querySelector(%q); return e ? e.textContent : ""; })()`, sel)))
		if err != nil {
			t.Fatalf("reading %s: %v", sel, err)
		}
		if strings.Contains(text, want) {
			return text
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s says %q, want it to contain %q", sel, text, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type jobJSON struct {
	Name     string `json:"name"`
	Enabled  bool   `json:"enabled"`
	Override *struct {
		By string  `json:"by"`
		At *string `json:"at"`
	} `json:"override"`
}

// logsJSON is GET /api/admin/cron/{job}/logs's answer, as far as these
// tests read it.
type logsJSON struct {
	Logs []runJSON `json:"logs"`
}

type runJSON struct {
	Slot       *string `json:"slot"`
	StartedAt  *string `json:"startedAt"`
	FinishedAt *string `json:"finishedAt"`
	Success    bool    `json:"success"`
	Result     struct {
		Skipped bool   `json:"skipped"`
		Reason  string `json:"reason"`
	} `json:"result"`
}

// Two replicas on one SQLite file; the browser talks to the second. The
// jobs table shows a run the first may have made, a pause from the page
// stops the job on both, and a trigger while a long run holds the lease
// shows the 409 as a message naming the holder.
func TestDashboardTwoReplicas(t *testing.T) {
	t.Parallel()
	ctx, shots := browser(t)
	marker := filepath.Join(t.TempDir(), "long-started")
	a := serve(t, `jobs:
  - name: tick
    schedule: "* * * * * *"
    shell: echo tick
  - name: long
    schedule: "0 0 1 1 *"
    shell: echo started > `+marker+`; sleep 60
`)
	b := startReplica(t, a.bin, a.dir, a.config) // the same config, the same SQLite file

	// Pages ask for Basic credentials whose password is a token; the
	// browser keeps them for the origin, as after its own prompt.
	base := b.withBasic("viewer", readToken)

	// 1. The jobs table renders the live state: tick's last run appears.
	reloadUntil(t, ctx, base+"/",
		`document.querySelector('tr[data-name="tick"] .last-run .outcome.ok') !== null`, 30*time.Second)
	waitText(t, ctx, `tr[data-name="tick"] .enabled`, "enabled", 5*time.Second)
	waitText(t, ctx, `tr[data-name="long"] .lease`, "never taken", 5*time.Second)
	screenshot(t, ctx, shots, "01-jobs")

	// A read token's page shows no button.
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('.actions button').length`)); err != nil || n != 0 {
		t.Fatalf("%d buttons (%v) on a read token's page, want none", n, err)
	}
	waitText(t, ctx, `tr[data-name="tick"]`, "read only", 5*time.Second)

	// 2. One sign-in: the admin's credentials that open the page also
	// authorise its buttons; no token is typed, none kept in the page's
	// storage or a cookie.
	admin := b.withBasic("ops", adminToken)
	reloadUntil(t, ctx, admin+"/?refresh=off", `document.querySelector('tr[data-name="tick"] button[data-action="pause"]') !== null`, 10*time.Second)
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("note"), "paused from the browser test")); err != nil {
		t.Fatal(err)
	}
	kept, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.cookie + "|" + JSON.stringify(sessionStorage) + JSON.stringify(localStorage)`))
	if err != nil || strings.Contains(kept, adminToken) || strings.HasPrefix(kept, "c") {
		t.Fatalf("cookie and storage = %q (%v), want no token kept", kept, err)
	}

	// 3. Pause tick from the page.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`tr[data-name="tick"] button[data-action="pause"]`))); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#flash", "Paused tick on every replica", 10*time.Second)
	waitText(t, ctx, `tr[data-name="tick"] .enabled`, "override paused by ops", 5*time.Second)
	waitText(t, ctx, `tr[data-name="tick"] .enabled`, "paused from the browser test", 5*time.Second)
	screenshot(t, ctx, shots, "02-paused")

	// Both replicas' APIs show it paused, by the token's holder.
	var pausedAt time.Time
	for _, r := range []*replica{a, b} {
		var j jobJSON
		if code := r.api(t, "GET", "/api/admin/cron/tick", readToken, "", &j); code != 200 || j.Enabled || j.Override == nil || j.Override.By != "ops" || j.Override.At == nil {
			t.Fatalf("%s: tick after the pause: %d %+v", r.url, code, j)
		}
		pausedAt, err = time.Parse(time.RFC3339Nano, *j.Override.At)
		if err != nil {
			t.Fatal(err)
		}
	}
	// And tick stops running on both: no run starts after the pause (a
	// second of slack for a slot claimed just before it). A slot due while
	// it is paused is recorded as a skip, not run.
	quiet := time.Now().Add(3 * time.Second)
	for time.Now().Before(quiet) {
		var logs logsJSON
		a.api(t, "GET", "/api/admin/cron/tick/logs?limit=5", readToken, "", &logs)
		for _, run := range logs.Logs {
			if run.StartedAt == nil || run.Result.Skipped {
				continue
			}
			started, _ := time.Parse(time.RFC3339Nano, *run.StartedAt)
			if started.After(pausedAt.Add(time.Second)) {
				t.Fatalf("tick ran at %s, after its pause at %s", started, pausedAt)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}

	// 4. A long run holds the lease on replica a; triggering it from the
	// page on replica b shows the 409 as a message naming the holder.
	var started struct {
		Owner      string `json:"owner"`
		Generation int64  `json:"generation"`
	}
	if code := a.api(t, "POST", "/api/admin/cron/long/run", adminToken, "", &started); code != 202 || started.Owner == "" {
		t.Fatalf("POST long/run on a: %d %+v", code, started)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the long job did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
	reloadUntil(t, ctx, admin+"/?refresh=off", `document.querySelector('tr[data-name="long"] .lease .held') !== null`, 10*time.Second)
	waitText(t, ctx, `tr[data-name="long"] .lease`, started.Owner, 5*time.Second)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`tr[data-name="long"] button[data-action="trigger"]`))); err != nil {
		t.Fatal(err)
	}
	msg := waitText(t, ctx, "#flash", "already executing on "+started.Owner+" since ", 10*time.Second)
	if !strings.Contains(msg, " UTC") || !strings.Contains(msg, fmt.Sprintf("generation %d", started.Generation)) {
		t.Fatalf("409 message %q lacks the time or the generation", msg)
	}
	class, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("flash").className`))
	if err != nil || class != "conflict" {
		t.Fatalf("flash class %q (%v), want conflict", class, err)
	}
	screenshot(t, ctx, shots, "03-conflict")

	// 5. The job page: tick's runs with their logs; long's refused trigger
	// is recorded as a skip.
	reloadUntil(t, ctx, base+"/job?name=tick", `document.querySelector('#runs tr.run.ok') !== null`, 5*time.Second)
	screenshot(t, ctx, shots, "04-job-tick")
	reloadUntil(t, ctx, base+"/job?name=long", `document.querySelector('#runs tr.run.skipped') !== null`, 5*time.Second)
	waitText(t, ctx, `#runs tr.run.skipped`, "already_executing", 5*time.Second)
	screenshot(t, ctx, shots, "05-job-long")
}

// A read-only token's page shows no button and carries no action key; an
// action posted from the page with its credentials anyway (a script in
// the console) is refused, and nothing changes.
func TestDashboardReadTokenCannotWrite(t *testing.T) {
	t.Parallel()
	ctx, shots := browser(t)
	r := serve(t, `jobs:
  - name: yearly
    schedule: "0 0 1 1 *"
    shell: "true"
`)
	base := r.withBasic("viewer", readToken)
	reloadUntil(t, ctx, base+"/?refresh=off", `document.querySelector('tr[data-name="yearly"]') !== null`, 10*time.Second)
	waitText(t, ctx, `tr[data-name="yearly"]`, "read only", 5*time.Second)
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('button[data-action], #note, [data-key]').length`)); err != nil || n != 0 {
		t.Fatalf("%d buttons, note fields or action keys (%v) on a read token's page, want none", n, err)
	}
	status, err := chromedp.Run(ctx, chromedp.Evaluate[int](`fetch(location.origin + document.body.dataset.act, {method: "POST",
		headers: {"Content-Type": "application/json", "X-Cronfence-Action": "1"}, credentials: "same-origin",
		body: JSON.stringify({job: "yearly", action: "pause", key: ""})}).then(function (r) { return r.status; })`,
		chromedp.EvalAwaitPromise))
	if err != nil || status != 403 {
		t.Fatalf("an action posted from a read token's page: %d (%v), want 403", status, err)
	}
	screenshot(t, ctx, shots, "01-read-only")
	var j jobJSON
	if code := r.api(t, "GET", "/api/admin/cron/yearly", readToken, "", &j); code != 200 || !j.Enabled || j.Override != nil {
		t.Fatalf("yearly after a refused pause: %d %+v", code, j)
	}
}
