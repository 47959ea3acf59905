package schedule

// searchYears bounds every wall-clock search. The Gregorian calendar
// repeats exactly every 400 years (146097 days, a whole number of weeks),
// so a pattern with no match in 401 years never matches; in practice a
// satisfiable pattern recurs within 40 years (February 29 on a given day
// of the week) and Parse screens out the unsatisfiable ones, so this is a
// safety cap that turns no correct answer into a wrong one.
const searchYears = 401

// nextWall returns the earliest wall second at or after lo that matches,
// moving field by field: a month that does not match is skipped whole, a
// day that does not match costs one bit operation, and so on down to the
// second. It reports false if nothing matches within searchYears.
func (s *spec) nextWall(lo int64) (int64, bool) {
	c := civilOf(lo)
	y, m, d, hh, mm, ss := c.year, c.month, c.day, c.hour, c.minute, c.second
	limit := y + searchYears
	for y <= limit {
		if !s.month.has(m) {
			nm, ok := s.month.next(m)
			if !ok {
				y, nm = y+1, s.month.first()
			}
			m, d, hh, mm, ss = nm, 1, 0, 0, 0
			continue
		}
		days := s.dayMask(y, m) >> uint(d) << uint(d)
		if days == 0 {
			if m++; m > 12 {
				y, m = y+1, 1
			}
			d, hh, mm, ss = 1, 0, 0, 0
			continue
		}
		if nd := days.first(); nd != d {
			d, hh, mm, ss = nd, 0, 0, 0
		}
		nh, ok := s.hour.next(hh)
		if !ok {
			d, hh, mm, ss = d+1, 0, 0, 0 // d may pass the month's end: the mask then is empty
			continue
		}
		if nh != hh {
			hh, mm, ss = nh, 0, 0
		}
		nmin, ok := s.minute.next(mm)
		if !ok {
			hh, mm, ss = hh+1, 0, 0
			continue
		}
		if nmin != mm {
			mm, ss = nmin, 0
		}
		nsec, ok := s.second.next(ss)
		if !ok {
			mm, ss = mm+1, 0
			continue
		}
		return wallSecond(y, m, d, hh, mm, nsec), true
	}
	return 0, false
}

// prevWall returns the latest wall second at or before hi that matches,
// or false if nothing matches within searchYears. It mirrors nextWall.
func (s *spec) prevWall(hi int64) (int64, bool) {
	c := civilOf(hi)
	y, m, d, hh, mm, ss := c.year, c.month, c.day, c.hour, c.minute, c.second
	limit := y - searchYears
	for y >= limit {
		if !s.month.has(m) {
			pm, ok := s.month.prev(m)
			if !ok {
				y, pm = y-1, s.month.last()
			}
			m, d, hh, mm, ss = pm, 31, 23, 59, 59 // dayMask never has days past the month's end
			continue
		}
		days := s.dayMask(y, m)
		if d < 31 {
			days &= 1<<uint(d+1) - 1
		}
		if days == 0 {
			if m--; m < 1 {
				y, m = y-1, 12
			}
			d, hh, mm, ss = 31, 23, 59, 59
			continue
		}
		if pd := days.last(); pd != d {
			d, hh, mm, ss = pd, 23, 59, 59
		}
		ph, ok := s.hour.prev(hh)
		if !ok {
			d, hh, mm, ss = d-1, 23, 59, 59 // d may reach 0: the mask then is empty
			continue
		}
		if ph != hh {
			hh, mm, ss = ph, 59, 59
		}
		pmin, ok := s.minute.prev(mm)
		if !ok {
			hh, mm, ss = hh-1, 59, 59
			continue
		}
		if pmin != mm {
			mm, ss = pmin, 59
		}
		psec, ok := s.second.prev(ss)
		if !ok {
			mm, ss = mm-1, 59
			continue
		}
		return wallSecond(y, m, d, hh, mm, psec), true
	}
	return 0, false
}

// wallSearch remembers the last answer of nextWall and prevWall. One call
// of Next or Prev walks zone periods (see zone.go) and asks about wall
// times that mostly lie inside the range already searched; without this a
// rarely matching spec would be searched again for every period crossed.
// It lives for one call only, so schedules stay safe for concurrent use.
type wallSearch struct {
	s *spec

	// Forward: the first match at or after fwdFrom is fwdWall (fwdOK) or
	// there is none.
	fwdValid, fwdOK  bool
	fwdFrom, fwdWall int64

	// Backward: the last match at or before bwdFrom is bwdWall (bwdOK) or
	// there is none.
	bwdValid, bwdOK  bool
	bwdFrom, bwdWall int64
}

func (w *wallSearch) next(lo int64) (int64, bool) {
	if w.fwdValid && lo >= w.fwdFrom && (!w.fwdOK || lo <= w.fwdWall) {
		return w.fwdWall, w.fwdOK
	}
	w.fwdWall, w.fwdOK = w.s.nextWall(lo)
	w.fwdFrom, w.fwdValid = lo, true
	return w.fwdWall, w.fwdOK
}

func (w *wallSearch) prev(hi int64) (int64, bool) {
	if w.bwdValid && hi <= w.bwdFrom && (!w.bwdOK || hi >= w.bwdWall) {
		return w.bwdWall, w.bwdOK
	}
	w.bwdWall, w.bwdOK = w.s.prevWall(hi)
	w.bwdFrom, w.bwdValid = hi, true
	return w.bwdWall, w.bwdOK
}
