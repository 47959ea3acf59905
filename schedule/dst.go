package schedule

// Daylight saving, as cronie does it.
//
// A job is a wildcard job when its minute or its hour field is written
// starting with "*" ("*/15 * * * *", "* 2 * * *", "30 */2 * * *",
// @hourly), and a fixed-time job otherwise: single values, lists, ranges
// and steps that do not start with "*" all name wall-clock times
// ("30 2 * * *", "0 9,17 * * *", "0 9-17 * * *", "0-59/15 2 * * *",
// "15,45 0-3 * * *"). This is cronie's rule to the letter: src/entry.c
// sets MIN_STAR or HR_STAR when the field's text begins with "*", and
// src/cron.c runs a job as a wildcard job iff either is set. The seconds
// field, which cronie does not have, plays no part; nor do the day fields.
//
// A wildcard job follows real time: its slots are exactly the instants
// whose wall time matches, so a repeated hour runs twice and a skipped one
// not at all.
//
// For a fixed-time job, each matching wall time on a matching day (an
// appointment) yields at most one slot:
//
//   - if the wall time exists once, that instant;
//   - if it exists twice (the clock was set back), the first instant only;
//   - if it does not exist (the clock jumped forward over it) and the jump
//     is shorter than adjustLimit, the instant of the jump, which is the
//     first instant after the gap (02:30 becomes 03:00 EDT in New York);
//   - if the jump is adjustLimit or longer (Samoa skipping 2011-12-30),
//     no slot: the appointment is lost, as in cronie.
//
// Appointments that land on the same instant (02:15 and 02:45 both moved
// to 03:00) make one slot, because a slot is an instant.
//
// cronie (src/cron.c, the "medium" and "negative" wake-up cases) gets the
// same effect by keeping a virtual clock that never moves backwards: when
// the clock jumps forward by up to 3 hours it runs the fixed-time jobs of
// every skipped minute at once, and while the clock is behind the virtual
// one (after a fall back) it runs only the wildcard jobs. Two deliberate
// differences, in corners none of the tests' zones reach: cronie runs
// everything again after a backward jump of more than 3 hours (its "large"
// case; the zone database's last is Antarctica/Vostok's in 1994), where
// here a fixed-time appointment never yields two slots; and after a
// forward jump of 4 minutes or less (its "small" case; only local mean
// time adjustments before 1933) cronie runs the skipped minutes of
// wildcard jobs too, where here they follow real time.

// adjustLimit is cronie's threshold, in seconds: fixed-time appointments
// skipped by a forward jump shorter than this run at the jump; longer
// jumps are treated as the clock being reset, and the appointments are
// lost.
const adjustLimit = 3 * 60 * 60

// gapAppointment reports whether a fixed-time job has an appointment in the
// wall-clock gap that opens where period p begins (prevOff is the offset
// before p). If so, and the gap is short enough, the job has a slot at
// p.start. forward says which of the search's caches to use.
func gapAppointment(ws *wallSearch, p period, prevOff int64, forward bool) bool {
	gap := p.offset - prevOff
	if p.start == noStart || gap <= 0 || gap >= adjustLimit {
		return false
	}
	lo, hi := p.start+prevOff, p.start+p.offset // the skipped wall times: [lo, hi)
	if forward {
		w, ok := ws.next(lo)
		return ok && w < hi
	}
	w, ok := ws.prev(hi - 1)
	return ok && w >= lo
}

// firstOccurrence returns the earliest wall time in period p at which a
// fixed-time job may have a slot: when the clock was set back as p began,
// the wall times from p's start up to the old period's end have already
// happened once, and a fixed-time appointment runs only the first time.
func firstOccurrence(p period, prevOff int64) int64 {
	if p.start != noStart && prevOff > p.offset {
		return p.start + prevOff
	}
	return p.wallStart()
}
