package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// The split deploy of the design seed: an API-only replica (no timers)
// serves the REST API; a manual run sent to it while a worker runs the job
// answers 409 with the skip row, and a pause set there reaches the worker.
func TestServeAPIOnlyReplicaAndWorker(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "started")
	cfg := writeConfig(t, dir, `tokens:
  - name: ops
    role: admin
    token: s3cret
jobs:
  - name: long
    schedule: "* * * * * *"
    shell: echo $$ > `+marker+`; sleep 30
`)
	addr := freeAddr(t)
	api := start(t, dir, "serve", "--config", cfg, "--scheduler=false", "--listen", addr, "--shutdown-grace", "500ms")
	worker := start(t, dir, "serve", "--config", cfg, "--shutdown-grace", "500ms", "--kill-grace", "500ms")
	waitForFile(t, marker, worker) // the worker runs the job and holds its lease

	waitHTTP(t, api, "http://"+addr, "/healthz")
	call := func(method, path, token string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(`{"enabled": false, "note": "maintenance"}`))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	if code, _ := call("GET", "/api/admin/cron", ""); code != http.StatusUnauthorized {
		t.Fatalf("no token: %d, want 401", code)
	}
	code, body := call("POST", "/api/admin/cron/long/run", "s3cret")
	if code != http.StatusConflict || body["code"] != "CRON_JOB_ALREADY_EXECUTING" {
		t.Fatalf("manual run during the worker's run: %d %v, want 409 CRON_JOB_ALREADY_EXECUTING", code, body)
	}
	log, _ := body["details"].(map[string]any)["log"].(map[string]any)
	if log["manual"] != true || fmt.Sprint(log["result"]) != "map[reason:already_executing skipped:true]" {
		t.Fatalf("409 details.log = %v", log)
	}
	if code, _ := call("PUT", "/api/admin/cron/long", "s3cret"); code != http.StatusOK {
		t.Fatalf("pause through the API replica: %d", code)
	}
	code, body = call("GET", "/api/admin/cron/long", "s3cret")
	if code != http.StatusOK || body["enabled"] != false {
		t.Fatalf("job after the pause: %d %v", code, body)
	}
	stopServe(t, worker)
	stopServe(t, api)
}
