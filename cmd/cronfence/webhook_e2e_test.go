package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/cmd/cronfence/internal/webhook"
	"github.com/cronfence/cronfence/internal/wait"
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
	var got []webhook.Payload
	waitPayloads(t, h, timeout, ps, func(all []webhook.Payload) bool { got = all; return len(all) >= n },
		func() string { return fmt.Sprintf("%d webhook deliveries, want %d", len(got), n) })
	return got
}

// waitDelivery waits until the receiver holds a delivery of kind in state,
// and returns it.
func waitDelivery(t *testing.T, h *hookReceiver, kind, state string, timeout time.Duration, ps []*proc) webhook.Payload {
	t.Helper()
	var found webhook.Payload
	waitPayloads(t, h, timeout, ps, func(got []webhook.Payload) bool {
		for _, p := range got {
			if p.Kind == kind && p.State == state {
				found = p
				return true
			}
		}
		return false
	}, func() string { return fmt.Sprintf("no %s %s delivery", kind, state) })
	return found
}

// waitPayloads polls the receiver's deliveries until done holds, failing
// after timeout (with what's message) or when a replica exits.
func waitPayloads(t *testing.T, h *hookReceiver, timeout time.Duration, ps []*proc, done func([]webhook.Payload) bool, what func() string) {
	t.Helper()
	var got []webhook.Payload
	wait.For(t, timeout, func() bool {
		got, _ = h.payloads()
		if done(got) {
			return true
		}
		for _, p := range ps {
			select {
			case <-p.done:
				t.Fatalf("a replica exited with %d; stderr:\n%s", p.code, p.stderr.String())
			default:
			}
		}
		return false
	}, func() string {
		return fmt.Sprintf("%s: %+v", what(), got)
	})
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

// Three replicas of one config with a webhook, and a job every second in
// three phases. Stuck: its first run never ends, so it skips slot after
// slot until one replica's check raises skip_streak, and the receiver gets
// that alert once, even after later checks saw it again. Slow: the stuck
// run ends and every run after it lasts 0.7 s, more than half the
// interval, so the streak breaks (skip_streak resolved) and slow_run is
// raised. Fast: runs end at once, and slow_run is resolved. The receiver
// gets each of the two alerts raised once and resolved once, four
// deliveries in all, each sent by the replica that changed the alert.
func TestServeWebhookDeliversEachAlertOnceAcrossThreeReplicas(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	hook := newHookReceiver(t)
	stop, fast := filepath.Join(dir, "stop"), filepath.Join(dir, "fast")
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
    shell: while [ ! -e `+stop+` ]; do sleep 0.1; done; [ -e `+fast+` ] || sleep 0.7
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
	waitSeenAgain(t, addr, raised.AlertID)
	if got, _ := hook.payloads(); len(got) != 1 {
		t.Fatalf("%d deliveries while one alert stayed open, want 1: %+v", len(got), got)
	}

	// Slow: the streak breaks, and the runs now last more than half their
	// interval.
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitDelivery(t, hook, "skip_streak", "resolved", 60*time.Second, ps)
	slow := waitDelivery(t, hook, "slow_run", "raised", 60*time.Second, ps)
	if slow.Subject != "stuck" || slow.Details["interval"] != "1s" || slow.DeliveryID != "alert-"+itoa(slow.AlertID)+"-raised" {
		t.Errorf("slow_run delivery = %+v; want slow_run of stuck, its interval 1s", slow)
	}
	// Each slow run moves the open alert on to its slot: later checks
	// refresh it without raising it again.
	waitSeenAgain(t, addr, slow.AlertID)
	if got, _ := hook.payloads(); len(got) != 3 {
		t.Fatalf("%d deliveries while slow_run stayed open, want 3 (skip_streak raised and resolved, slow_run raised): %+v", len(got), got)
	}
	// Fast: the next run resolves slow_run.
	if err := os.WriteFile(fast, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitDelivery(t, hook, "slow_run", "resolved", 60*time.Second, ps)
	stopReplicas(t, ps)

	got, headers := hook.payloads()
	if len(got) != 4 {
		t.Errorf("%d deliveries, want skip_streak and slow_run raised and resolved once each: %+v", len(got), got)
	}
	byDelivery := map[string]int{}
	for i, p := range got {
		byDelivery[p.DeliveryID]++
		if h := headers[i]; h.Get("Authorization") != "Bearer hook-secret" || h.Get("X-Cronfence-Delivery") != p.DeliveryID {
			t.Errorf("delivery %d headers: %v", i, h)
		}
		if !strings.Contains(p.Replica, ":") || (p.State == "raised" && p.RaisedBy != p.Replica) {
			t.Errorf("delivery %s raised by %q, sent by %q: want the raising replica's owner id in both", p.DeliveryID, p.RaisedBy, p.Replica)
		}
	}
	for _, a := range []webhook.Payload{raised, slow} {
		var res *webhook.Payload
		for i := range got {
			if got[i].DeliveryID == "alert-"+itoa(a.AlertID)+"-resolved" {
				res = &got[i]
			}
		}
		if n := byDelivery[a.DeliveryID]; n != 1 {
			t.Errorf("%s delivered %d times, want once", a.DeliveryID, n)
		}
		if res == nil || byDelivery[res.DeliveryID] != 1 {
			t.Errorf("%s of alert %d: resolved delivered %d times, want once", a.Kind, a.AlertID, byDelivery["alert-"+itoa(a.AlertID)+"-resolved"])
			continue
		}
		if res.State != "resolved" || res.Kind != a.Kind || res.ResolvedAt == nil || res.ResolvedAt.Before(a.RaisedAt) {
			t.Errorf("resolved delivery = %+v; want alert %d (%s) resolved after it was raised", *res, a.AlertID, a.Kind)
		}
	}
}

// waitSeenAgain waits until a check after the one that raised alert id
// saw it again: its lastSeenAt moved on from its raisedAt.
func waitSeenAgain(t *testing.T, addr string, id int64) {
	t.Helper()
	wait.For(t, 60*time.Second, func() bool {
		for _, a := range getAlerts(t, addr) {
			r, err1 := time.Parse(time.RFC3339Nano, a.RaisedAt)
			l, err2 := time.Parse(time.RFC3339Nano, a.LastSeenAt)
			if a.ID == id && err1 == nil && err2 == nil && l.After(r) {
				return true
			}
		}
		return false
	}, func() string {
		return fmt.Sprintf("no later check saw alert %d again", id)
	})
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

func getReplicas(t *testing.T, addr string) client.ReplicaList {
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
	var l client.ReplicaList
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
