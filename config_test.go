package cronfence

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

func TestAlertThresholdDefaultsAndValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		cfg        Config
		wantEvery  time.Duration
		wantAlerts AlertThresholds
		wantErr    string
	}{
		{name: "defaults", wantEvery: 15 * time.Second,
			wantAlerts: AlertThresholds{SkipStreak: 3, FailingSlots: 3, ClockOffset: 2 * time.Second, ReplicaStale: 30 * time.Second, OrphanWindow: 24 * time.Hour}},
		{name: "stale follows the heartbeat", cfg: Config{HeartbeatEvery: 2 * time.Second}, wantEvery: 15 * time.Second,
			wantAlerts: AlertThresholds{SkipStreak: 3, FailingSlots: 3, ClockOffset: 2 * time.Second, ReplicaStale: 6 * time.Second, OrphanWindow: 24 * time.Hour}},
		{name: "set and disabled", cfg: Config{CheckEvery: -1, Alerts: AlertThresholds{SkipStreak: -1, FailingSlots: -1, ClockOffset: time.Minute, ReplicaStale: time.Minute, OrphanWindow: -1}},
			wantEvery: -1, wantAlerts: AlertThresholds{SkipStreak: -1, FailingSlots: -1, ClockOffset: time.Minute, ReplicaStale: time.Minute, OrphanWindow: -1}},
		{name: "too frequent", cfg: Config{CheckEvery: 500 * time.Millisecond}, wantErr: "Config.CheckEvery must be at least 1s"},
		{name: "longer than a lease may last", cfg: Config{CheckEvery: 85 * time.Hour}, wantErr: "Config.CheckEvery must be at most 84h0m0s"},
		{name: "negative staleness", cfg: Config{Alerts: AlertThresholds{ReplicaStale: -time.Second}}, wantErr: "Config.Alerts.ReplicaStale must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := tc.cfg
			cfg.Store = intercept(nil) // New does no I/O: none of its methods is called
			s, err := New(cfg)
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("New: %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.e.cfg.CheckEvery != tc.wantEvery || s.e.cfg.Alerts != tc.wantAlerts {
				t.Fatalf("CheckEvery %s, Alerts %+v; want %s, %+v", s.e.cfg.CheckEvery, s.e.cfg.Alerts, tc.wantEvery, tc.wantAlerts)
			}
		})
	}
	// The checks' own thresholds: a negative one is off (zero).
	got := AlertThresholds{SkipStreak: -1, FailingSlots: -1, ClockOffset: -1, ReplicaStale: time.Minute, OrphanWindow: -1}.absence(-1)
	if got.SkipStreak != 0 || got.Failing != 0 || got.ClockOffset != 0 || got.OrphanWindow != 0 || got.ReplicaStale != time.Minute || got.Retention != 0 {
		t.Fatalf("absence thresholds %+v: want the negative ones off (zero)", got)
	}
	if got := (AlertThresholds{}).absence(DefaultRetention); got.Retention != DefaultRetention {
		t.Fatalf("absence thresholds %+v: want the retention %s", got, DefaultRetention)
	}
}
