package sqlstore

import (
	"database/sql"
	"testing"
	"time"
)

func TestDecoderInstant(t *testing.T) {
	t.Parallel()
	d := NewDecoder(func(us int64) time.Time { return time.UnixMicro(us).UTC() })
	scan := func(v any) (time.Time, error) {
		got := time.Now() // overwritten, NULL included
		err := d.Instant(&got).(sql.Scanner).Scan(v)
		return got, err
	}
	want := time.Date(2026, 9, 25, 3, 5, 0, 123456000, time.UTC)
	if got, err := scan(want.UnixMicro()); err != nil || !got.Equal(want) || got.Location() != time.UTC {
		t.Errorf("Scan(%d) = %v, %v, want %v", want.UnixMicro(), got, err, want)
	}
	if got, err := scan(nil); err != nil || !got.IsZero() {
		t.Errorf("Scan(NULL) = %v, %v, want the zero time", got, err)
	}
	if _, err := scan("2026-09-25"); err == nil {
		t.Error("Scan of a string into an int64 instant column: no error")
	}
}
