package dashboard

import (
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/admin/client"
)

// hist builds run rows from a compact form, newest first: per slot (a
// minute apart, the newest at 12:09), "ok", "x" (failed), "s" (skip),
// "p" (skipped while the job was paused), "-" (no row), or attempts joined
// by "/", newest first ("ok2/x1").
func hist(t *testing.T, kinds ...string) []client.Run {
	t.Helper()
	var out []client.Run
	slot := time.Date(2026, 3, 1, 12, 9, 0, 0, time.UTC)
	id := int64(1000)
	for _, k := range kinds {
		for _, a := range strings.Split(k, "/") {
			if a == "-" {
				continue
			}
			s := slot.Format(time.RFC3339)
			start := slot.Add(time.Second)
			r := client.Run{ID: id, Slot: &s, Attempt: 1}
			id--
			switch {
			case a == "s":
				r.Result = client.RunResult{Skipped: true, Reason: "already_executing"}
				r.Success = true
			case a == "p":
				r.Result = client.RunResult{Skipped: true, Reason: "paused"}
				r.Success = true
			case strings.HasPrefix(a, "ok"):
				r.Success = true
			default:
				e := "exit status 1"
				r.Error = &e
			}
			if n := a[len(a)-1]; n >= '1' && n <= '9' {
				r.Attempt = int(n - '0')
			}
			st, fin := start.Format(time.RFC3339Nano), start.Add(time.Duration(r.Attempt)*10*time.Second).Format(time.RFC3339Nano)
			r.StartedAt, r.FinishedAt = &st, &fin
			out = append(out, r)
		}
		slot = slot.Add(-time.Minute)
	}
	return out
}

func states(s stripView) string {
	var out []string
	for _, c := range s.Cells {
		out = append(out, c.State)
	}
	return strings.Join(out, " ")
}

func TestStripOfTheLastSlots(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 9, 30, 0, time.UTC)
	job := client.Job{Name: "sync", Schedule: "* * * * *", TimeZone: "UTC", Enabled: true}
	paused := job
	paused.Enabled = false
	acquired := "2026-03-01T12:09:00.5Z"
	held := job
	held.Lease = &client.Lease{Active: true, AcquiredAt: &acquired}
	retried := "2026-03-01T12:09:21Z" // after the first attempt ended, at 12:09:11
	retrying := job
	retrying.Lease = &client.Lease{Active: true, AcquiredAt: &retried}
	for _, tc := range []struct {
		name  string
		job   client.Job
		runs  []client.Run
		n     int
		want  string // oldest first
		rate  string
		title string // in some cell's tooltip
	}{
		{name: "no runs: no cells", job: job, n: 5},
		{name: "each state", job: job, runs: hist(t, "ok", "x", "s", "-", "ok2/x1"), n: 10,
			want: "ok missed skipped failed ok", rate: "2 of 4 ok", title: "ok on attempt 2"},
		{name: "at most n, the newest", job: job, runs: hist(t, "ok", "ok", "x", "ok", "ok"), n: 3, want: "failed ok ok", rate: "2 of 3 ok"},
		{name: "no row while paused", job: paused, runs: hist(t, "-", "-", "ok"), n: 5, want: "ok paused paused", rate: "1 of 1 ok"},
		// Resumed since: the skips recorded while it was paused say so,
		// and count neither way.
		{name: "skipped while paused", job: job, runs: hist(t, "ok", "p", "p", "x", "ok"), n: 10,
			want: "ok failed paused paused ok", rate: "2 of 3 ok", title: "skipped: the job was paused"},
		{name: "the lease holds the newest slot", job: held, runs: hist(t, "-", "ok"), n: 5, want: "ok running", rate: "1 of 1 ok"},
		{name: "a lease taken before the slot's run ended runs something else", job: held, runs: hist(t, "ok", "ok"), n: 5, want: "ok ok", rate: "2 of 2 ok"},
		{name: "a retry in progress is running", job: retrying, runs: hist(t, "x1", "ok"), n: 5, want: "ok running", rate: "1 of 1 ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			strip, _ := historyOf(tc.job, tc.runs, now, tc.n)
			if got := states(strip); got != tc.want || strip.Rate != tc.rate {
				t.Fatalf("strip %q, rate %q; want %q, %q", got, strip.Rate, tc.want, tc.rate)
			}
			if tc.title != "" {
				found := false
				for _, c := range strip.Cells {
					found = found || strings.Contains(c.Title, tc.title)
				}
				if !found {
					t.Errorf("no cell's title says %q: %+v", tc.title, strip.Cells)
				}
			}
			for i, c := range strip.Cells {
				if c.X != i*(cellW+cellGap) {
					t.Errorf("cell %d at x %d, want %d", i, c.X, i*(cellW+cellGap))
				}
			}
		})
	}
}

// A just-due slot without a row is pending, not missed: its claim may be
// in flight.
func TestStripPendingSlot(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 10, 3, 0, time.UTC)
	strip, _ := historyOf(client.Job{Schedule: "* * * * *", TimeZone: "UTC", Enabled: true}, hist(t, "ok"), now, 5)
	if got := states(strip); got != "ok pending" {
		t.Fatalf("strip %q, want ok then pending", got)
	}
}

func TestChartOfRunDurations(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 9, 30, 0, time.UTC)
	job := client.Job{Schedule: "* * * * *", TimeZone: "UTC", Enabled: true}
	// Durations 10s, 20s (attempt 2), 10s, a skip (not charted), newest first.
	_, c := historyOf(job, hist(t, "ok", "ok2", "s", "x"), now, 10)
	if len(c.Bars) != 3 || c.Interval != "1m0s" || c.LongestLabel != "20s" || c.OffChart {
		t.Fatalf("chart %+v; want 3 bars against a 1m interval, longest 20s", c)
	}
	// Scale: the interval (60s) fills the plot; bars of 10s and 20s are a
	// sixth and a third of it, oldest on the left.
	plot := chartH - 10
	if c.IntervalY != chartH-plot {
		t.Errorf("interval line at %d, want %d", c.IntervalY, chartH-plot)
	}
	wantH := []int{plot / 6, plot / 3, plot / 6}
	wantState := []string{cellFailed, cellOK, cellOK}
	for i, b := range c.Bars {
		if b.H != wantH[i] || b.Y != chartH-b.H || b.State != wantState[i] || (i > 0 && b.X <= c.Bars[i-1].X) {
			t.Errorf("bar %d = %+v; want height %d, %s, left to right", i, b, wantH[i], wantState[i])
		}
	}
	// A daily job whose runs take seconds: the interval is off the chart.
	daily := client.Job{Schedule: "0 12 * * *", TimeZone: "UTC", Enabled: true}
	slot := "2026-03-01T12:00:00Z"
	s, f := "2026-03-01T12:00:00Z", "2026-03-01T12:00:02Z"
	_, c = historyOf(daily, []client.Run{{ID: 1, Slot: &slot, StartedAt: &s, FinishedAt: &f, Success: true, Attempt: 1}}, now, 10)
	if !c.OffChart || c.IntervalY != 0 || c.Interval != "24h0m0s" || len(c.Bars) != 1 || c.Bars[0].H != plot {
		t.Fatalf("daily chart %+v; want the interval off the chart and the run's bar full height", c)
	}
}
