package dashboard

import (
	"fmt"
	"strconv"
	"time"

	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/schedule"
	"github.com/cronfence/cronfence/store"
)

// A job's history as pictures: a strip of its last slots, each how it
// ended, and a chart of its runs' durations against the schedule's
// interval. Both are inline SVG, computed here from the run rows the page
// read anyway, so they need no script and no request of their own.

// Cell states of the strip.
const (
	cellOK      = "ok"      // the slot's last attempt succeeded
	cellFailed  = "failed"  // it failed (attempts may be left: "retrying" in its title)
	cellSkipped = "skipped" // skipped: an overlap, or given up
	cellMissed  = "missed"  // no run: nothing ran it
	cellPaused  = "paused"  // skipped while the job was paused, or no run while it is
	cellRunning = "running" // the job's lease holds it now
	cellPending = "pending" // just due: its claim may be in flight
)

// pendingFor is how long after its instant a slot without a run is
// "pending" rather than "missed".
const pendingFor = 10 * time.Second

// Strip sizes, in SVG user units (the CSS scales them).
const (
	cellW, cellH, cellGap = 12, 18, 3
	chartW, chartH        = 600, 120
)

type stripCell struct {
	X     int
	State string
	Title string // the tooltip: slot, state, attempts, error
}

type stripView struct {
	Cells  []stripCell // oldest first
	Width  int
	Height int
	// Rate is the share of ended slots that succeeded ("9 of 10 ok"),
	// over the cells: a skip (an overlap, a pause) counts neither way.
	// Empty when none ended.
	Rate    string
	RatePct int
}

type bar struct {
	X, Y, W, H int
	State      string // cellOK or cellFailed
	Title      string
}

type chartView struct {
	Bars          []bar // oldest first
	Width, Height int
	// IntervalY is the interval line's height, when it fits the chart
	// (Interval > 0); the scale is the larger of the interval and the
	// longest run, so a job near its interval shows how near.
	IntervalY    int
	Interval     string
	LongestLabel string
	OffChart     bool // the interval is more than 4 times the longest run: not drawn
}

// historyOf builds the strip of the job's last n slots at or before now
// and the chart of its last n finished runs, from runs (newest first, as
// read) and the job's state: its schedule in its zone, whether it is
// paused, its lease. A slot older than the oldest run read is left out:
// the job may not have existed then.
func historyOf(job client.Job, runs []client.Run, now time.Time, n int) (stripView, chartView) {
	loc := zone(job.TimeZone)
	sched, err := schedule.Parse(job.Schedule, &schedule.Options{Location: loc})
	if err != nil {
		return stripView{}, chartView{}
	}
	// Each slot's runs, newest first: the first is its last attempt.
	bySlot := map[int64][]client.Run{}
	oldest := time.Time{}
	for _, r := range runs {
		slot := parseTime(r.Slot)
		if r.Manual || slot.IsZero() {
			continue
		}
		bySlot[slot.Unix()] = append(bySlot[slot.Unix()], r)
		if oldest.IsZero() || slot.Before(oldest) {
			oldest = slot
		}
	}
	running := runningSlot(job, sched, bySlot)
	var slots []time.Time // newest first
	for s := sched.Prev(now); !s.IsZero() && len(slots) < n && !oldest.IsZero() && !s.Before(oldest); s = sched.Prev(s.Add(-time.Second)) {
		slots = append(slots, s)
	}
	strip := stripView{Height: cellH}
	ended, ok := 0, 0
	for i := len(slots) - 1; i >= 0; i-- {
		s := slots[i]
		c := stripCell{X: len(strip.Cells) * (cellW + cellGap)}
		c.State, c.Title = cellOf(s, bySlot[s.Unix()], job, now, running)
		c.Title = at(s, loc, time.Time{}).Zone + ": " + c.Title
		switch c.State {
		case cellOK:
			ended, ok = ended+1, ok+1
		case cellFailed, cellMissed:
			ended++
		}
		strip.Cells = append(strip.Cells, c)
	}
	strip.Width = max(len(strip.Cells)*(cellW+cellGap)-cellGap, 0)
	if ended > 0 {
		strip.Rate = fmt.Sprintf("%d of %d ok", ok, ended)
		strip.RatePct = ok * 100 / ended
	}
	return strip, chartOf(runs, sched, loc, n)
}

// runningSlot is the slot the job's lease holds now, as far as the page
// can tell: the slot at or before the lease's acquisition, unless a run
// of it ended since (the lease then runs something else, a manual run).
// Zero when the lease is not held.
func runningSlot(job client.Job, sched schedule.Schedule, bySlot map[int64][]client.Run) time.Time {
	l := job.Lease
	if l == nil || !l.Active {
		return time.Time{}
	}
	acquired := parseTime(l.AcquiredAt)
	if acquired.IsZero() {
		return time.Time{}
	}
	s := sched.Prev(acquired)
	if rs := bySlot[s.Unix()]; len(rs) > 0 && !parseTime(rs[0].FinishedAt).Before(acquired) {
		return time.Time{}
	}
	return s
}

// cellOf is how the slot s ended, from its runs (newest first), and a
// word on it for the tooltip.
func cellOf(s time.Time, runs []client.Run, job client.Job, now, running time.Time) (string, string) {
	if !running.IsZero() && running.Equal(s) {
		return cellRunning, "running"
	}
	if len(runs) == 0 {
		switch {
		case now.Sub(s) < pendingFor:
			return cellPending, "due just now"
		case !job.Enabled:
			return cellPaused, "no run: the job is paused"
		default:
			return cellMissed, "no run"
		}
	}
	last := runs[0]
	switch {
	case last.Result.Skipped && last.Result.Reason == string(store.ClaimPaused):
		return cellPaused, "skipped: the job was paused"
	case last.Result.Skipped:
		return cellSkipped, "skipped (" + last.Result.Reason + ")"
	case last.Success:
		return cellOK, "ok" + attempts(last)
	default:
		why := "failed" + attempts(last)
		if last.Error != nil {
			why += ": " + cut(*last.Error, 200)
		}
		return cellFailed, why
	}
}

func attempts(r client.Run) string {
	if r.Attempt > 1 {
		return " on attempt " + strconv.Itoa(r.Attempt)
	}
	return ""
}

// chartOf charts the durations of the last n finished runs (skips and
// runs still going left out), oldest on the left, against the interval
// between the newest run's slot and the next.
func chartOf(runs []client.Run, sched schedule.Schedule, loc *time.Location, n int) chartView {
	type point struct {
		took  time.Duration
		state string
		title string
	}
	var pts []point // newest first
	var interval time.Duration
	for _, r := range runs {
		s, f := parseTime(r.StartedAt), parseTime(r.FinishedAt)
		if r.Result.Skipped || s.IsZero() || f.IsZero() || f.Before(s) {
			continue
		}
		if len(pts) == n {
			break
		}
		state := cellOK
		if !r.Success {
			state = cellFailed
		}
		label := "manual"
		if slot := parseTime(r.Slot); !slot.IsZero() {
			label = at(slot, loc, time.Time{}).Zone
			if interval == 0 {
				if next := sched.Next(slot); !next.IsZero() {
					interval = next.Sub(slot)
				}
			}
		}
		pts = append(pts, point{f.Sub(s), state, fmt.Sprintf("%s: %s, %s", label, duration(f.Sub(s)), state)})
	}
	c := chartView{Width: chartW, Height: chartH}
	if len(pts) == 0 {
		return c
	}
	longest := time.Duration(0)
	for _, p := range pts {
		longest = max(longest, p.took)
	}
	c.LongestLabel = duration(longest)
	scale := longest
	if interval > 0 {
		c.Interval = duration(interval)
		if interval <= 4*longest {
			scale = max(scale, interval)
		} else {
			c.OffChart = true
		}
	}
	if scale <= 0 {
		scale = time.Millisecond
	}
	plot := chartH - 10 // room above the tallest bar
	height := func(d time.Duration) int { return int(int64(plot) * int64(d) / int64(scale)) }
	slotW := chartW / max(len(pts), n/2, 1)
	for i := len(pts) - 1; i >= 0; i-- {
		p := pts[i]
		h := max(height(p.took), 1) // a run of no time still shows
		k := len(pts) - 1 - i
		c.Bars = append(c.Bars, bar{X: k*slotW + 1, Y: chartH - h, W: max(slotW-2, 1), H: h, State: p.state, Title: p.title})
	}
	if interval > 0 && !c.OffChart {
		c.IntervalY = chartH - height(interval)
	}
	return c
}

// cut bounds s to n bytes, on a character boundary, marked.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
