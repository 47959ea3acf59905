package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// The test-only clock offset is never silent: a replica started with it says
// so at every start, and a value that is not a duration stops serve.
func TestTestClockOffset(t *testing.T) {
	for _, tc := range []struct {
		value   string
		want    time.Duration // the shift, when the value is good
		wantErr string
		warns   bool
	}{
		{value: "", want: 0},
		{value: "-3m", want: -3 * time.Minute, warns: true},
		{value: "90s", want: 90 * time.Second, warns: true},
		{value: "soon", wantErr: `CRONFENCE_TEST_CLOCK_OFFSET="soon" is not a duration`},
	} {
		t.Run(tc.value, func(t *testing.T) {
			t.Setenv(testClockOffsetEnv, tc.value)
			var logs bytes.Buffer
			clk, err := testClockOffset(slog.New(slog.NewTextHandler(&logs, nil)))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == 0 {
				if clk != nil {
					t.Fatalf("unset variable gave clock %v, want the process clock (nil)", clk)
				}
			} else if got := time.Until(clk.Now()).Round(time.Second); got != tc.want {
				t.Fatalf("clock shifted by %v, want %v", got, tc.want)
			}
			warned := strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "TEST ONLY")
			if warned != tc.warns {
				t.Fatalf("warned = %v, want %v; log: %s", warned, tc.warns, logs.String())
			}
		})
	}
}
