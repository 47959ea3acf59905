package sqlite

import (
	"database/sql"
	"time"

	"github.com/cronfence/cronfence/store/internal/sqlstore"
)

// Instants are stored as INTEGER Unix microseconds. Microseconds are the
// precision of a PostgreSQL timestamptz, so an instant rounds the same way in
// both stores (sqlstore.Normalize), and an integer compares and indexes
// exactly, which text timestamps in mixed zones or precisions would not.

// micros returns t as Unix microseconds, dropping finer digits (as pgx does
// when it encodes a timestamptz).
func micros(t time.Time) int64 { return t.UnixMicro() }

// fromMicros is the inverse of micros, in UTC.
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// decode reads the rows of the tables this store shares with MySQL.
var decode = sqlstore.NewDecoder(fromMicros)

// now is the one clock of the store: the pinned instant if set, otherwise
// Config.NowFunc's if set, otherwise the process clock, which is the
// database clock here since every process sharing the file shares the host.
// It is normalized like a stored instant. Every "now" the store writes or
// compares against comes from here; only the waits for a lock (BusyTimeout)
// and the migration record's applied_at use the real clock.
func (s *Store) now(pinned time.Time) time.Time {
	switch {
	case !pinned.IsZero():
		return sqlstore.Normalize(pinned)
	case s.nowFunc != nil:
		return sqlstore.Normalize(s.nowFunc())
	}
	return sqlstore.Normalize(time.Now())
}

// nullMicros maps the zero time to NULL.
func nullMicros(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: micros(t), Valid: true}
}
