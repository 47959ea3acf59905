package sqlite

import (
	"database/sql"
	"time"
)

// Instants are stored as INTEGER Unix microseconds. Microseconds are the
// precision of a PostgreSQL timestamptz, so an instant rounds the same way in
// both stores, and an integer compares and indexes exactly, which text
// timestamps in mixed zones or precisions would not.

// micros returns t as Unix microseconds, dropping finer digits (as pgx does
// when it encodes a timestamptz).
func micros(t time.Time) int64 { return t.UnixMicro() }

// fromMicros is the inverse of micros, in UTC.
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// fromNullMicros maps NULL to the zero time.
func fromNullMicros(us sql.NullInt64) time.Time {
	if !us.Valid {
		return time.Time{}
	}
	return fromMicros(us.Int64)
}

// normalize returns t in UTC truncated to the microsecond: the value a
// round trip through the database gives back. Slot instants are normalized
// before they become keys, so the same occurrence computed in two zones or
// with stray nanoseconds is the same row.
func normalize(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return fromMicros(micros(t))
}

// now is the one clock of the store: the pinned instant if set, otherwise
// Config.NowFunc's if set, otherwise the process clock, which is the
// database clock here since every process sharing the file shares the host.
// It is normalized like a stored instant. Every "now" the store writes or
// compares against comes from here; only the waits for a lock (BusyTimeout)
// and the migration record's applied_at use the real clock.
func (s *Store) now(pinned time.Time) time.Time {
	switch {
	case !pinned.IsZero():
		return normalize(pinned)
	case s.nowFunc != nil:
		return normalize(s.nowFunc())
	}
	return normalize(time.Now())
}

// nullMicros maps the zero time to NULL.
func nullMicros(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: micros(t), Valid: true}
}
