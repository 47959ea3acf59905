package sqlstore

import (
	"time"

	"github.com/cronfence/cronfence/store"
)

// Normalize returns t in UTC truncated to the microsecond: the value a
// round trip through either store gives back (a DATETIME(6), or INTEGER
// Unix microseconds), and the precision of a PostgreSQL timestamptz. Slot
// instants are normalized before they become keys, so the same occurrence
// computed in two zones or with stray nanoseconds is the same row.
func Normalize(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Microsecond)
}

// RunRow is run, validated and bounded, as it is stored, with the time
// defaults of Store.RunInsert at now (a zero StartedAt is now; a zero
// FinishedAt is StartedAt when that was given, a skip being an instant,
// otherwise now), and its logs as their column holds them.
func RunRow(run store.Run, now time.Time) (store.Run, string, error) {
	run.Slot = Normalize(run.Slot)
	run.StartedAt, run.FinishedAt = Normalize(run.StartedAt), Normalize(run.FinishedAt)
	if run.FinishedAt.IsZero() {
		run.FinishedAt = run.StartedAt
	}
	if run.StartedAt.IsZero() {
		run.StartedAt = now
	}
	if run.FinishedAt.IsZero() {
		run.FinishedAt = now
	}
	logs, err := encodeJSON(run.Logs, "[]")
	return run, logs, err
}
