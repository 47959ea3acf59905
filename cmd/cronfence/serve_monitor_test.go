package main

import (
	"reflect"
	"testing"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/cmd/cronfence/internal/config"
)

// Every field of the monitor: section reaches the field of the same name in
// cronfence.Config or its Alerts, so a field added to the section and not
// copied fails here. (TestServeWebhookDeliversEachAlertOnceAcrossThreeReplicas
// shows the values at work in a real serve.)
func TestWithMonitorCopiesEveryField(t *testing.T) {
	t.Parallel()
	var m config.Monitor
	mv := reflect.ValueOf(&m).Elem()
	for i := range mv.NumField() {
		if mv.Type().Field(i).Name == "Line" {
			continue
		}
		// Distinct values, so a field copied into its neighbour shows.
		switch f := mv.Field(i); f.Kind() {
		case reflect.Int:
			f.SetInt(int64(100 + i))
		case reflect.Int64: // time.Duration
			f.SetInt(int64(time.Duration(i+1) * time.Second))
		default:
			t.Fatalf("config.Monitor.%s: %s not handled", mv.Type().Field(i).Name, f.Kind())
		}
	}
	cfg := withMonitor(cronfence.Config{Owner: "kept"}, m)
	if cfg.Owner != "kept" {
		t.Fatal("withMonitor lost the rest of the config")
	}
	cv, av := reflect.ValueOf(cfg), reflect.ValueOf(cfg.Alerts)
	for i := range mv.NumField() {
		name := mv.Type().Field(i).Name
		if name == "Line" {
			continue
		}
		got := cv.FieldByName(name)
		if !got.IsValid() {
			got = av.FieldByName(name)
		}
		if !got.IsValid() {
			t.Errorf("config.Monitor.%s has no field of its name in cronfence.Config or AlertThresholds", name)
			continue
		}
		if got.Int() != mv.Field(i).Int() {
			t.Errorf("%s: got %v, want %v", name, got.Interface(), mv.Field(i).Interface())
		}
	}
	// Off is negative: what cronfence.Config reads as disabled.
	if config.Off >= 0 {
		t.Fatalf("config.Off = %s, want negative", config.Off)
	}
}
