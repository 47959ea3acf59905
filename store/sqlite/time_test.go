package sqlite

import (
	"testing"
	"time"
)

func TestNormalize(t *testing.T) {
	t.Parallel()
	saoPaulo := time.FixedZone("-03", -3*3600)
	tests := []struct {
		in, want time.Time
	}{
		{
			in:   time.Date(2026, 9, 25, 0, 5, 0, 123456789, saoPaulo),
			want: time.Date(2026, 9, 25, 3, 5, 0, 123456000, time.UTC),
		},
		{ // before 1970 the integer is negative; digits are still dropped towards the past
			in:   time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC),
			want: time.Date(1969, 12, 31, 23, 59, 59, 999999000, time.UTC),
		},
		{in: time.Time{}, want: time.Time{}},
	}
	for _, tt := range tests {
		got := normalize(tt.in)
		if !got.Equal(tt.want) || got.Location() != tt.want.Location() {
			t.Errorf("normalize(%v) = %v, want %v", tt.in, got, tt.want)
		}
		if !tt.in.IsZero() && !fromMicros(micros(tt.in)).Equal(got) {
			t.Errorf("micros round trip of %v = %v, want %v", tt.in, fromMicros(micros(tt.in)), got)
		}
	}
	// The same occurrence seen from two zones is one key.
	a := time.Date(2026, 9, 25, 0, 5, 0, 0, saoPaulo)
	if micros(a) != micros(a.UTC()) {
		t.Errorf("micros depends on the zone")
	}
}
