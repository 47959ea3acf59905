package adminview

import "time"

// Time is t as the API writes a time: RFC 3339 in UTC with fractions, or
// nil (JSON null) when t is zero.
func Time(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}
