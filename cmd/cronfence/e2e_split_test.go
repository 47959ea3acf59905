package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// slotsAfter returns the slots of lines (RFC 3339) strictly after t.
func slotsAfter(t *testing.T, lines []string, after time.Time) []time.Time {
	t.Helper()
	var out []time.Time
	for _, l := range lines {
		s, err := time.Parse(time.RFC3339, l)
		if err != nil {
			t.Fatalf("slot %q: %v", l, err)
		}
		if s.After(after) {
			out = append(out, s)
		}
	}
	return out
}

// TestServeE2ESplitDeployPause is the seed's split deploy: an API-only
// replica (serve --scheduler=false --listen) and two workers. A pause PUT
// to the API replica reaches the workers through the database: no slot
// after its answer runs, and the workers settle the next ones as skipped
// with no run row (what a pause does; an overlap would leave a skip row).
// After {"enabled": null} the workers run the job again. The API replica
// runs nothing itself.
func TestServeE2ESplitDeployPause(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, db []string) {
		ctx := context.Background()
		dir := t.TempDir()
		serveDB, openDB := serveStoreArgs(dir, db)
		out := filepath.Join(dir, "slots.txt")
		cfg := writeConfig(t, dir, everySecondConfig(out, "skip"))
		addr := freeAddr(t)
		api := start(t, dir, args(serveDB, "serve", "--config", cfg, "--scheduler=false", "--listen", addr,
			"--shutdown-grace", "2s", "--kill-grace", "1s")...)
		var workers []*proc
		for range 2 {
			workers = append(workers, start(t, dir, args(serveDB, "serve", "--config", cfg, "--shutdown-grace", "2s", "--kill-grace", "1s")...))
		}
		all := append([]*proc{api}, workers...)
		url := "http://" + addr + "/api/admin/cron/every-second"
		waitForSlots(t, out, 2, 30*time.Second, all...)

		code, body := apiPut(t, api, url, `{"enabled": false, "note": "split pause"}`)
		paused := time.Now() // after the answer: the override is saved
		ov, _ := body["override"].(map[string]any)
		if code != http.StatusOK || body["enabled"] != false || ov["enabled"] != false || ov["by"] != "ops" || ov["note"] != "split pause" {
			t.Fatalf("PUT enabled=false to the API replica: %d %v", code, body)
		}
		// Each slot due after the answer is claimed by the workers after
		// the override was saved, so their claim reads the pause: the next
		// two are settled skipped.
		st := openArgs(t, openDB)
		next := paused.Truncate(time.Second).Add(time.Second)
		skipped := []time.Time{next, next.Add(time.Second)}
		for _, slot := range skipped {
			deadline := time.Now().Add(20 * time.Second)
			for {
				sl, err := st.SlotGet(ctx, "every-second", slot)
				if err == nil {
					if sl.Status != store.SlotSkipped {
						t.Fatalf("slot %s after the pause: %+v, want skipped", slot.Format(time.RFC3339), sl)
					}
					break
				}
				if !errors.Is(err, store.ErrNotFound) {
					t.Fatal(err)
				}
				for _, p := range all {
					select {
					case <-p.done:
						t.Fatalf("a replica exited with %d while paused; stderr:\n%s", p.code, p.stderr.String())
					default:
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("slot %s, due after the pause, not settled by the workers 20s later", slot.Format(time.RFC3339))
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		if ran := slotsAfter(t, slotLines(out), paused); len(ran) > 0 {
			t.Fatalf("slots %v ran after the pause's answer at %s", ran, paused.Format(time.RFC3339Nano))
		}

		code, body = apiPut(t, api, url, `{"enabled": null}`)
		resumed := time.Now()
		if code != http.StatusOK || body["enabled"] != true {
			t.Fatalf("PUT enabled=null to the API replica: %d %v", code, body)
		}
		deadline := time.Now().Add(20 * time.Second)
		for len(slotsAfter(t, slotLines(out), resumed)) < 2 {
			for _, p := range all {
				select {
				case <-p.done:
					t.Fatalf("a replica exited with %d after the resume; stderr:\n%s", p.code, p.stderr.String())
				default:
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("slots after the resume at %s: %v, want 2 within 20s", resumed.Format(time.RFC3339Nano), slotsAfter(t, slotLines(out), resumed))
			}
			time.Sleep(20 * time.Millisecond)
		}
		stopReplicas(t, all)
		checkSlotsOnce(t, slotLines(out), false)

		// Every run row is a worker's; of the paused slots, only their
		// skips, with reason paused.
		runs, err := st.RunList(ctx, store.RunListParams{Job: "every-second", Limit: store.MaxRunListLimit})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if !slices.ContainsFunc(workers, func(w *proc) bool { return strings.Contains(r.Owner, fmt.Sprintf(":%d:", w.cmd.Process.Pid)) }) {
				t.Errorf("run row %+v: not by a worker", r)
			}
			if slices.ContainsFunc(skipped, r.Slot.Equal) && (!r.Skipped || r.Reason != string(store.ClaimPaused)) {
				t.Errorf("run row %+v of a slot due while paused: want its skip, reason paused", r)
			}
		}
	})
}
