package adminview_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/adminview"
	"github.com/cronfence/cronfence/store"
)

// A run's JSON has null for what it lacks (a manual run's slot, no error)
// and never null where clients iterate or read fields (logs, result).
func TestRunOf(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 600_000_000, time.FixedZone("x", 3600))
	got, err := json.Marshal(adminview.RunOf(store.Run{ID: 7, Job: "nightly", Manual: true, Owner: "r1", Generation: 3, Attempt: 1, StartedAt: start, Success: true}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":7,"jobId":"nightly","slot":null,"manual":true,"catchUp":false,"owner":"r1","generation":3,"attempt":1,` +
		`"startedAt":"2026-01-02T02:04:05.6Z","finishedAt":null,"success":true,"result":{"skipped":false,"reason":""},"error":null,"logs":[]}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if v := adminview.RunOf(store.Run{Error: "boom", Skipped: true, Reason: "x"}); v.Error == nil || *v.Error != "boom" || !v.Result.Skipped {
		t.Fatalf("an error and a skip: %+v", v)
	}
}
