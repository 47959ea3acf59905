// Package schedule computes when a job runs: its slots, the instants a
// cron spec or an @every interval intends it to run. It does no I/O and
// keeps no state between calls; the scheduler arms timers with Next,
// catch-up finds the most recent missed slot with Prev, and config
// validation and "cronfence next" call Parse.
//
// # Grammar
//
// A spec is an optional time-zone prefix followed by either five or six
// fields or a descriptor, separated by white space:
//
//	[CRON_TZ=Zone | TZ=Zone] [second] minute hour day-of-month month day-of-week
//	[CRON_TZ=Zone | TZ=Zone] @descriptor
//
//	field          values   names
//	second         0-59              (optional; 0 when there are five fields)
//	minute         0-59
//	hour           0-23
//	day-of-month   1-31              "?" alone means "*"
//	month          1-12     JAN-DEC
//	day-of-week    0-7      SUN-SAT  0 and 7 are Sunday; "?" alone means "*"
//
// Each field is a comma-separated list of elements; an element is "*", a
// value, or a range "a-b", optionally followed by a step "/n": "*/n" is
// every n-th value of the field, "a-b/n" every n-th from a to b, "a/n"
// every n-th from a to the end of the field. Names are case-insensitive and
// may appear wherever a value may ("MON-FRI", "jan-jun/2"). For "*" and
// "a/n" the day of the week runs 0-6, so "*/2" is 0,2,4,6; ranges may end
// at 7. A step runs from 1 to the field's number of values (60 for minutes).
// Ranges must not be backwards ("FRI-MON" is an error). The Quartz L, W and
// # extensions and a year field are not supported.
//
// The day of the month and the day of the week combine as in Vixie cron
// (and cronie): if either field is written starting with "*" (or is "?"),
// a day must match both fields, which for a plain "*" means the other field
// alone decides; if neither does, a day matching either field is enough.
// So "0 0 1,15 * MON" runs on the 1st, the 15th and every Monday, "0 0 * *
// MON" only on Mondays, and "0 0 */2 * MON" only on Mondays that fall on an
// odd day of the month, because "*/2" starts with "*".
//
// Descriptors: @yearly and @annually ("0 0 1 1 *"), @monthly ("0 0 1 * *"),
// @weekly ("0 0 * * 0"), @daily and @midnight ("0 0 * * *"), @hourly
// ("0 * * * *"), and @every D. @reboot is refused: a cluster has no single
// boot to run at.
//
// A CRON_TZ= or TZ= prefix names the IANA zone the fields are read in,
// overriding Options.Location (default UTC); "Local" is refused because
// each machine's may differ. Specs longer than MaxSpecLen bytes are
// refused. Every refusal is a *ParseError naming the part at fault:
//
//	schedule: day-of-month field "32": value 32 out of range 1-31
//
// # Daylight saving time
//
// Fields are matched against wall-clock time in the job's zone, and changes
// of the zone's UTC offset are handled as cronie handles them (cronie's
// src/cron.c, cases "medium" and "negative"):
//
// A job whose minute or hour field is written starting with "*" is a
// wildcard job: "*/15 * * * *", "* 2 * * *", "30 */2 * * *", @hourly.
// Every other job is a fixed-time job, lists, ranges and steps that do not
// start with "*" included: "30 2 * * *", "0,30 2 * * *", "0 9-17 * * *",
// "0-59/15 2 * * *", "15,45 0-3 * * *", @daily. This is cronie's rule, and
// like cronie it reads the text: "5,*/30" is fixed, "*/30,5" is wild. The
// seconds field of a six-field spec does not change the classification
// ("*/20 30 2 * * *" is a fixed-time job at 02:30): cronie, which has no
// seconds, decides by the minute and hour fields alone.
//
// For a fixed-time job each matching wall time on a matching day is an
// appointment, and each appointment yields at most one slot:
//
//  1. Spring forward. An appointment in a wall-clock gap runs at the moment
//     of the change, the first instant after the gap: "30 2 * * *" in
//     America/New_York runs at 03:00 EDT on 2024-03-10. Only for jumps
//     shorter than 3 hours, cronie's limit; a longer jump is a reset, and
//     appointments in it are lost (Pacific/Apia skipped 2011-12-30: a daily
//     job has no slot that day). Appointments that move to the same instant
//     make one slot: "15,45 0-3 * * *" runs at 00:15, 00:45, 01:15 and 01:45
//     EST, once at 03:00 EDT for 02:15 and 02:45, then at 03:15 and 03:45.
//  2. Fall back. An appointment in a repeated interval runs once, at its
//     first occurrence: "30 1 * * *" runs at 01:30 EDT on 2024-11-03, not
//     again at 01:30 EST, and "15,45 0-3 * * *" runs at 01:15 and 01:45
//     EDT only.
//
// A wildcard job follows real time:
//
//  3. Its slots are exactly the instants whose wall time matches. In a
//     repeated interval it runs in both occurrences ("*/15 * * * *" runs at
//     01:00, 01:15, ... EDT and again at 01:00 ... EST); in a gap the
//     missing wall times do not exist and do not run.
//
// This differs from cronie in two corners, on purpose: cronie runs
// everything again after the clock goes back by more than 3 hours, where
// here an appointment never yields two slots (the zone database's last
// such jump is Antarctica/Vostok's in 1994); and after a forward jump of 4
// minutes or less cronie also runs the skipped minutes of wildcard jobs at
// the change (such jumps are all local-mean-time adjustments before 1933).
//
// # Intervals
//
// "@every D" takes a Go duration (time.ParseDuration) of at least one
// second and a whole number of seconds. Its slots are Options.Anchor + k·D
// for every integer k, counted in absolute time, so every replica computes
// the same instants without asking anyone, whenever it asks, and daylight
// saving does not affect them ("@every 1h" runs 25 times on a fall-back
// day). The anchor defaults to the Unix epoch; String does not include it.
//
// # Slots and their invariants
//
// Slots are whole seconds between 0001-01-01T00:00:01Z and
// 9999-12-31T23:59:59Z (RFC 3339's range, less the zero time, which means
// "none"), returned in the schedule's location. For every t, where a zero
// result stands for "none":
//
//	Next(t) > t, and no slot lies in (t, Next(t)): Prev(Next(t) - 1ns) == Prev(t)
//	Prev(t) <= t, and no slot lies in (Prev(t), t]: Next(Prev(t)) == Next(t)
//	for every slot s: Prev(s) == s and Next(s - 1ns) == s
//
// That is, Next and Prev describe one set of slots from both sides: a slot
// the timer would fire is the slot catch-up would find. Both are
// monotonic in t.
//
// A spec that never fires is refused, with the reason: one whose days never
// exist ("0 0 31 2 *": day 31 never falls in February), and one whose every
// wall time from now on falls where its zone's clock jumps forward, which
// a wildcard job skips ("* 2 8-14 3 */7" in America/New_York, where 02:00
// to 02:59 is missing on the second Sunday of March). The second is found
// by Next from the time of parsing, a search bounded as below; a spec that
// fires rarely, such as "0 0 29 2 *", parses.
//
// # Cost
//
// Next and Prev cost a few hundred nanoseconds for everyday specs and never
// iterate second by second: they walk the zone's offset periods (a few a
// year) and, inside each, search the fields from month down to second,
// skipping whole months and days with bit operations. The search is
// bounded by the 400-year cycle of the Gregorian calendar, after which any
// pattern repeats, so every call finishes in bounded time whatever the
// spec.
package schedule
