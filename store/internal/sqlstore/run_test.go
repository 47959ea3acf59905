package sqlstore

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
		{ // before 1970 digits are still dropped towards the past
			in:   time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC),
			want: time.Date(1969, 12, 31, 23, 59, 59, 999999000, time.UTC),
		},
		{in: time.Time{}, want: time.Time{}},
	}
	for _, tt := range tests {
		got := Normalize(tt.in)
		if !got.Equal(tt.want) || got.Location() != tt.want.Location() {
			t.Errorf("Normalize(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
