package absence

import (
	"fmt"
	"strconv"

	"github.com/cronfence/cronfence/store"
)

// maxFailingError bounds the last error an alert of kind failing quotes,
// its middle cut out past it.
const maxFailingError = 300

// checkFailing raises failing when the job's last limit slots (or more)
// ended failed. A slot's newest run row is its last attempt (rows come
// newest first), and its result is the slot's: a slot ended failed when
// that attempt failed and no further one is to come, because it was the
// job's last (MaxAttempts) or a later slot came due since (a retry is
// never made past the next slot). A newest slot that failed with attempts
// left is still being retried: it neither counts nor breaks the streak.
// Skips and manual runs do neither either. It resolves when the job's
// newest ended slot succeeded. A limit of zero turns it off.
func checkFailing(j *Job, d JobData, limit int) (Alert, bool) {
	if limit <= 0 {
		return Alert{}, false
	}
	var (
		failed  []store.Run // each failed slot's last attempt, newest first
		last    store.Run   // the slot whose attempts are being read
		later   bool        // a row of a later slot came before (a skip included)
		settled = true      // the whole history read was judged
	)
	for _, r := range d.Runs {
		if r.Manual || r.Slot.IsZero() {
			continue
		}
		if r.Skipped {
			later = true
			continue
		}
		if !last.Slot.IsZero() && r.Slot.Equal(last.Slot) {
			continue // an earlier attempt of the slot just judged
		}
		last = r
		if r.Success {
			settled = false
			break
		}
		if !later && r.Attempt < j.Settings.MaxAttempts {
			later = true // retried still; what comes after it is older
			continue
		}
		later = true
		failed = append(failed, r)
	}
	if len(failed) < limit {
		return Alert{}, false
	}
	newest, oldest := failed[0], failed[len(failed)-1]
	count := strconv.Itoa(len(failed))
	if settled && len(d.Runs) > 0 {
		count += "+" // no success among the rows read: the streak may be longer
	}
	lastError := cutMiddle(newest.Error, maxFailingError)
	return Alert{
		Kind: store.AlertFailing, Subject: j.Name,
		Details: map[string]string{
			"count":       count,
			"threshold":   strconv.Itoa(limit),
			"first_slot":  ts(oldest.Slot),
			"latest_slot": ts(newest.Slot),
			"attempts":    strconv.Itoa(newest.Attempt),
			"last_error":  lastError,
			"owner":       newest.Owner,
		},
		Message: fmt.Sprintf("job %q: its last %s ended failed (the latest, %s, after %s: %s)",
			j.Name, lastSlots(count), ts(newest.Slot), plural(newest.Attempt, "attempt"), lastError),
	}, true
}

// cutMiddle bounds s to about n bytes by cutting out its middle, marked
// "…", without splitting a character: an error's head names what failed
// and its tail how (a command's "exit status 3" comes last).
func cutMiddle(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := n/2, len(s)-n/2
	for head > 0 && s[head]&0xC0 == 0x80 {
		head--
	}
	for tail < len(s) && s[tail]&0xC0 == 0x80 {
		tail++
	}
	return s[:head] + "…" + s[tail:]
}

// lastSlots is "its last …" of a streak of count slots: "slot" for one,
// else "3 slots", "3+ slots".
func lastSlots(count string) string {
	if count == "1" {
		return "slot"
	}
	return count + " slots"
}

// plural is n and noun, in the plural unless n is one: "1 attempt", "3
// attempts".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
