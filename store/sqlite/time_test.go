package sqlite

import (
	"testing"
	"time"

	"github.com/cronfence/cronfence/store/internal/sqlstore"
)

// TestMicros checks that an instant stored as microseconds comes back as
// sqlstore.Normalize has it, the value every store gives back.
func TestMicros(t *testing.T) {
	t.Parallel()
	saoPaulo := time.FixedZone("-03", -3*3600)
	for _, in := range []time.Time{
		time.Date(2026, 9, 25, 0, 5, 0, 123456789, saoPaulo),
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC), // a negative integer
	} {
		want := sqlstore.Normalize(in)
		if got := fromMicros(micros(in)); !got.Equal(want) || got.Location() != want.Location() {
			t.Errorf("micros round trip of %v = %v, want %v", in, got, want)
		}
	}
	// The same occurrence seen from two zones is one key.
	a := time.Date(2026, 9, 25, 0, 5, 0, 0, saoPaulo)
	if micros(a) != micros(a.UTC()) {
		t.Errorf("micros depends on the zone")
	}
}
