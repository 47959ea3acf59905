package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/adminapi"
	"github.com/cronfence/cronfence/internal/webhook"
)

// hookReceiver is a real HTTP endpoint that keeps every delivery.
type hookReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []webhook.Payload
	hdr []http.Header
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p webhook.Payload
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
			t.Errorf("webhook receiver: %v", err)
			http.Error(w, "bad JSON", http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.got, h.hdr = append(h.got, p), append(h.hdr, r.Header.Clone())
		h.mu.Unlock()
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookReceiver) payloads() ([]webhook.Payload, []http.Header) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]webhook.Payload(nil), h.got...), append([]http.Header(nil), h.hdr...)
}

// waitHook waits until the receiver holds n deliveries.
func waitHook(t *testing.T, h *hookReceiver, n int, timeout time.Duration, ps []*proc) []webhook.Payload {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got, _ := h.payloads()
		if len(got) >= n {
			return got
		}
		for _, p := range ps {
			select {
			case <-p.done:
				t.Fatalf("a replica exited with %d; stderr:\n%s", p.code, p.stderr.String())
			default:
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d webhook deliveries after %s, want %d: %+v", len(got), timeout, n, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// getAlerts reads the alerts through the REST API.
func getAlerts(t *testing.T, addr string) []struct {
	ID         int64  `json:"id"`
	Kind       string `json:"kind"`
	RaisedAt   string `json:"raisedAt"`
	LastSeenAt string `json:"lastSeenAt"`
} {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/api/admin/cron/alerts", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Alerts []struct {
			ID         int64  `json:"id"`
			Kind       string `json:"kind"`
			RaisedAt   string `json:"raisedAt"`
			LastSeenAt string `json:"lastSeenAt"`
		} `json:"alerts"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("GET alerts: %d: %v", resp.StatusCode, err)
	}
	return body.Alerts
}

// Three replicas of one config with a webhook: a job whose run never ends
// skips slot after slot until one replica's check raises skip_streak, and
// the receiver gets that alert once, even after later checks saw it again;
// when the run ends the streak breaks and the receiver gets one resolved
// delivery of the same alert.
func TestServeWebhookDeliversEachAlertOnceAcrossThreeReplicas(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	hook := newHookReceiver(t)
	stop := filepath.Join(dir, "stop")
	cfg := writeConfig(t, dir, `tokens:
  - name: ops
    role: admin
    token: s3cret
webhook:
  url: `+hook.srv.URL+`/alerts
  timeout: 2s
  headers:
    Authorization: Bearer hook-secret
monitor:
  heartbeat_every: 1s
  check_every: 1s
  replica_stale: 5s
  skip_streak: 2
jobs:
  - name: stuck
    schedule: "* * * * * *"
    lease_ttl: 5s
    shell: while [ ! -e `+stop+` ]; do sleep 0.1; done
`)
	ps, addr := startReplicas(t, dir, cfg, nil, 3)

	got := waitHook(t, hook, 1, 60*time.Second, ps)
	raised := got[0]
	if raised.State != "raised" || raised.Kind != "skip_streak" || raised.Subject != "stuck" ||
		raised.DeliveryID != "alert-"+itoa(raised.AlertID)+"-raised" || raised.Message == "" {
		t.Fatalf("first delivery = %+v; want skip_streak of stuck, raised", raised)
	}
	if raised.Details["threshold"] != "2" {
		t.Errorf("skip_streak threshold %q, want monitor.skip_streak's 2", raised.Details["threshold"])
	}
	checkMonitorSection(t, addr)
	// Later checks see the alert again (its lastSeenAt moves on) without
	// raising it again.
	deadline := time.Now().Add(60 * time.Second)
	for {
		seenAgain := false
		for _, a := range getAlerts(t, addr) {
			r, err1 := time.Parse(time.RFC3339Nano, a.RaisedAt)
			l, err2 := time.Parse(time.RFC3339Nano, a.LastSeenAt)
			if a.ID == raised.AlertID && err1 == nil && err2 == nil && l.After(r) {
				seenAgain = true
			}
		}
		if seenAgain {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no later check saw the alert again within 60s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got, _ := hook.payloads(); len(got) != 1 {
		t.Fatalf("%d deliveries while one alert stayed open, want 1: %+v", len(got), got)
	}

	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got = waitHook(t, hook, 2, 60*time.Second, ps)
	stopReplicas(t, ps)
	got, headers := hook.payloads()
	if len(got) != 2 {
		t.Fatalf("%d deliveries, want raised and resolved once each: %+v", len(got), got)
	}
	resolved := got[1]
	if resolved.State != "resolved" || resolved.AlertID != raised.AlertID || resolved.ResolvedAt == nil ||
		resolved.DeliveryID != "alert-"+itoa(raised.AlertID)+"-resolved" {
		t.Fatalf("second delivery = %+v; want alert %d resolved", resolved, raised.AlertID)
	}
	for i, h := range headers {
		if h.Get("Authorization") != "Bearer hook-secret" || h.Get("X-Cronfence-Delivery") != got[i].DeliveryID {
			t.Errorf("delivery %d headers: %v", i, h)
		}
	}
	if !strings.Contains(raised.Replica, ":") || raised.RaisedBy != raised.Replica {
		t.Errorf("raised by %q, sent by %q: want the raising replica's owner id in both", raised.RaisedBy, raised.Replica)
	}
}

// checkMonitorSection shows that the file's monitor: section reached the
// scheduler and the API of serve: the checks' lease lasts two check_every
// periods (1s), the API judges replicas live by replica_stale (5s), and each
// replica's heartbeat moves on about once a second (the default 10s would
// take 20s to show three).
func checkMonitorSection(t *testing.T, addr string) {
	t.Helper()
	heartbeats := map[string]map[string]bool{}
	leaseSeen := false
	deadline := time.Now().Add(15 * time.Second)
	for {
		l := getReplicas(t, addr)
		if l.LiveFor != "5s" {
			t.Fatalf("replicas liveFor %q, want replica_stale's 5s", l.LiveFor)
		}
		// A lease handed back (its holder missed a heartbeat) has expired
		// at its release; only a held one shows its TTL.
		if m := l.Monitor; m != nil && m.Active && m.LastPassAt != nil && m.ExpiresAt != nil {
			if ttl := parseTime(t, *m.ExpiresAt).Sub(parseTime(t, *m.LastPassAt)); ttl != 2*time.Second {
				t.Fatalf("the checks' lease lasts %s, want two check_every periods (2s)", ttl)
			}
			leaseSeen = true
		}
		for _, r := range l.Replicas {
			if heartbeats[r.Owner] == nil {
				heartbeats[r.Owner] = map[string]bool{}
			}
			if r.HeartbeatAt != nil {
				heartbeats[r.Owner][*r.HeartbeatAt] = true
			}
		}
		done := leaseSeen && len(heartbeats) == 3
		for _, seen := range heartbeats {
			done = done && len(seen) >= 3
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("in 15s: monitor lease held %v; heartbeats by replica %v, want 3 replicas with 3 each (heartbeat_every: 1s)", leaseSeen, heartbeats)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func getReplicas(t *testing.T, addr string) adminapi.ReplicaList {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/api/admin/cron/replicas", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var l adminapi.ReplicaList
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET replicas: %d: %v", resp.StatusCode, err)
	}
	return l
}

func parseTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
