package schedule

import (
	"math"
	"time"
)

// A zone period is a stretch of absolute time during which a location's
// UTC offset does not change. Inside one period wall time and absolute time
// move together, so the instants of a period whose wall times match a spec
// are simply those wall times minus the offset. Daylight-saving gaps and
// repeats happen only where one period ends and the next begins.
type period struct {
	// start and end bound the period: [start, end) in Unix seconds.
	// noStart and noEnd stand for "since the beginning of time" and
	// "forever".
	start, end int64
	// offset is the UTC offset in seconds (wall = instant + offset).
	offset int64
}

const (
	noStart = math.MinInt64
	noEnd   = math.MaxInt64
)

// periodAt returns the period of loc that contains instant x.
func periodAt(loc *time.Location, x int64) period {
	t := time.Unix(x, 0).In(loc)
	_, off := t.Zone()
	p := period{start: noStart, end: noEnd, offset: int64(off)}
	start, end := t.ZoneBounds()
	if !start.IsZero() {
		p.start = min(start.Unix(), x)
	}
	if !end.IsZero() {
		p.end = end.Unix()
	}
	if p.end <= x {
		// Past a zone's last listed transition Go derives bounds from the
		// zone's rule one UTC calendar year at a time, and ends the year's
		// last period 365 days after the year began (time.tzset): on
		// December 31 of a leap year the bounds exclude t altogether
		// (golang/go#81583). With "slim" zone files, such as Go's own
		// zoneinfo.zip and time/tzdata, that is already 2024-12-31. The
		// offset Go reports is right, and in Go's own model it holds until
		// the UTC year ends, where the bounds are right again; end there.
		p.end = nextUTCYear(x)
	}
	return p
}

// nextUTCYear returns the first instant of the UTC year after instant x.
func nextUTCYear(x int64) int64 {
	y, _, _ := civilFromDays(floorDiv(x, secondsPerDay))
	return daysFromCivil(y+1, 1, 1) * secondsPerDay
}

// wallStart and wallEnd bound the period's wall times: [wallStart, wallEnd).
func (p period) wallStart() int64 {
	if p.start == noStart {
		return noStart
	}
	return p.start + p.offset
}

func (p period) wallEnd() int64 {
	if p.end == noEnd {
		return noEnd
	}
	return p.end + p.offset
}

// previousOffset returns the offset in force just before p began, or p's
// own offset if p has no beginning (nothing then was skipped or repeated).
func (p period) previousOffset(loc *time.Location) int64 {
	if p.start == noStart {
		return p.offset
	}
	return offsetAt(loc, p.start-1)
}

// offsetAt returns loc's UTC offset at instant x, in seconds.
func offsetAt(loc *time.Location, x int64) int64 {
	_, off := time.Unix(x, 0).In(loc).Zone()
	return int64(off)
}
