package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/cmd/cronfence/internal/config"
)

// Every field of the history: section reaches the field of the same name in
// cronfence.Config, so a field added to the section and not copied fails
// here.
func TestWithHistoryCopiesEveryField(t *testing.T) {
	t.Parallel()
	var h config.History
	hv := reflect.ValueOf(&h).Elem()
	for i := range hv.NumField() {
		if hv.Type().Field(i).Name == "Line" {
			continue
		}
		// Distinct values, so a field copied into its neighbour shows.
		f := hv.Field(i)
		if f.Kind() != reflect.Int64 { // time.Duration
			t.Fatalf("config.History.%s: %s not handled", hv.Type().Field(i).Name, f.Kind())
		}
		f.SetInt(int64(time.Duration(i+1) * time.Hour))
	}
	cfg := withHistory(cronfence.Config{Owner: "kept", CheckEvery: time.Minute}, h)
	if cfg.Owner != "kept" || cfg.CheckEvery != time.Minute {
		t.Fatal("withHistory lost the rest of the config")
	}
	cv := reflect.ValueOf(cfg)
	for i := range hv.NumField() {
		name := hv.Type().Field(i).Name
		if name == "Line" {
			continue
		}
		got := cv.FieldByName(name)
		if !got.IsValid() {
			t.Errorf("config.History.%s has no field of its name in cronfence.Config", name)
			continue
		}
		if got.Int() != hv.Field(i).Int() {
			t.Errorf("%s: got %v, want %v", name, got.Interface(), hv.Field(i).Interface())
		}
	}
}

// What a file says reaches the scheduler's config as serve builds it, off
// as the negative Retention the library reads as "do not prune".
func TestWithHistoryFromFile(t *testing.T) {
	t.Parallel()
	const jobs = "jobs:\n  - {name: a, schedule: '@hourly', shell: 'true'}\n"
	for _, tc := range []struct {
		name, src             string
		retention, pruneEvery time.Duration
	}{
		{"defaults", jobs, cronfence.DefaultRetention, cronfence.DefaultPruneEvery},
		{"set", "history:\n  retention: 720h\n  prune_every: 10m\n" + jobs, 720 * time.Hour, 10 * time.Minute},
		{"off", "history:\n  retention: off\n" + jobs, config.Off, cronfence.DefaultPruneEvery},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "cronfence.yaml")
			if err := os.WriteFile(path, []byte(tc.src), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := config.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			cfg := withHistory(withMonitor(cronfence.Config{}, f.Monitor), f.History)
			if cfg.Retention != tc.retention || cfg.PruneEvery != tc.pruneEvery {
				t.Fatalf("Retention %s, PruneEvery %s; want %s and %s", cfg.Retention, cfg.PruneEvery, tc.retention, tc.pruneEvery)
			}
		})
	}
	if config.Off >= 0 {
		t.Fatalf("config.Off = %s, want negative: what cronfence.Config reads as no pruning", config.Off)
	}
}
