package main

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A job whose command fails every run, on three serve replicas: each slot
// is attempted max_attempts times, the retry after retry_backoff, once
// across the replicas; the failing alert is raised once (check exits 1,
// one webhook delivery) and, once the job is fixed, resolved once (check
// exits 0, one more delivery).
func TestServeFailingJobIsRetriedAndAlertsOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	hook := newHookReceiver(t)
	attempts, fixed := filepath.Join(dir, "attempts"), filepath.Join(dir, "fixed")
	cfg := writeConfig(t, dir, `webhook:
  url: `+hook.srv.URL+`/alerts
  timeout: 2s
monitor:
  heartbeat_every: 1s
  check_every: 1s
  replica_stale: 5s
  failing_slots: 2
jobs:
  - name: export
    schedule: "*/4 * * * * *"
    max_attempts: 2
    retry_backoff: 1s
    shell: echo "$CRONFENCE_SLOT $CRONFENCE_ATTEMPT $CRONFENCE_ORIGIN $(date +%s.%N)" >> `+attempts+`; [ -e `+fixed+` ] || { echo "bucket not found" >&2; exit 3; }
`)
	ps, _ := startReplicas(t, dir, cfg, nil, 3)

	raised := waitDelivery(t, hook, "failing", "raised", 60*time.Second, ps)
	if raised.Subject != "export" || raised.Details["threshold"] != "2" || raised.Details["attempts"] != "2" ||
		raised.Details["last_error"] != "exit status 3" {
		t.Errorf("failing delivery = %+v; want export, threshold 2, 2 attempts, the command's exit status", raised)
	}
	code, out, errOut := runCLI(t, dir, "check", "--config", cfg)
	if code != checkAlerting || !strings.Contains(out, "failing") || !strings.Contains(out, "export") {
		t.Fatalf("check while failing: exit %d, stdout %q, stderr %q; want 1 naming the failing alert", code, out, errOut)
	}

	if err := os.WriteFile(fixed, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitDelivery(t, hook, "failing", "resolved", 60*time.Second, ps)
	var healthy bool
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !healthy; time.Sleep(200 * time.Millisecond) {
		code, out, errOut = runCLI(t, dir, "check", "--config", cfg)
		healthy = code == checkHealthy
	}
	if !healthy {
		t.Fatalf("check once fixed: exit %d, stdout %q, stderr %q; want 0", code, out, errOut)
	}
	stopReplicas(t, ps)

	deliveries, _ := hook.payloads()
	var failing []string
	for _, p := range deliveries {
		if p.Kind == "failing" {
			failing = append(failing, p.State)
		}
	}
	if strings.Join(failing, ",") != "raised,resolved" {
		t.Errorf("failing deliveries %v; want raised once, then resolved once", failing)
	}
	checkAttempts(t, attempts)
}

// checkAttempts reads the job's attempts (slot, attempt, origin, start)
// and checks each slot's attempts: once each, numbered from 1, the retry
// a second or more after the attempt before it, and no slot but the last
// two (cut short by the stop, or fixed) with fewer than two.
func checkAttempts(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type attempt struct {
		n      int
		origin string
		at     float64
	}
	bySlot := map[string][]attempt{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 {
			t.Fatalf("attempt line %q", line)
		}
		n, _ := strconv.Atoi(f[1])
		at, _ := strconv.ParseFloat(f[3], 64)
		bySlot[f[0]] = append(bySlot[f[0]], attempt{n, f[2], at})
	}
	slots := make([]string, 0, len(bySlot))
	for s := range bySlot {
		slots = append(slots, s)
	}
	sort.Strings(slots)
	retried := 0
	for _, s := range slots {
		as := bySlot[s]
		for i, a := range as {
			wantOrigin := "scheduled"
			if i > 0 {
				wantOrigin = "retry"
			}
			if a.n != i+1 || a.origin != wantOrigin || i >= 2 {
				t.Errorf("slot %s: attempts %+v; want 1 (scheduled) then 2 (retry), each once", s, as)
				break
			}
			if i == 1 && a.at-as[0].at < 1 {
				t.Errorf("slot %s: the retry came %.3fs after the first attempt, before the 1s backoff", s, a.at-as[0].at)
			}
		}
		if len(as) == 2 {
			retried++
		}
	}
	if retried < 2 {
		t.Errorf("%d slots retried, want at least the two that raised the alert: %v", retried, bySlot)
	}
}
