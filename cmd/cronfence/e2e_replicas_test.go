package main

import (
	"encoding/json"
	"net/http"
	neturl "net/url"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/mytest"
	"github.com/cronfence/cronfence/internal/pgtest"
)

// everySecondConfig is a config whose job appends its slot to out every
// second, with an admin token for the REST API. overlap is the job's
// policy: "allow" when every slot must run even if the previous run,
// slowed by a loaded machine, still holds the job's lease.
func everySecondConfig(out, overlap string) string {
	return `tokens:
  - name: ops
    role: admin
    token: s3cret
jobs:
  - name: every-second
    schedule: "*/1 * * * * *"
    lease_ttl: 5s
    overlap: ` + overlap + `
    shell: echo "$CRONFENCE_SLOT" >> ` + out + `
`
}

// startReplicas starts n serve replicas of cfg in dir on the database of
// db (nil: the SQLite file beside cfg); the first one serves the REST API
// on the returned address.
func startReplicas(t *testing.T, dir, cfg string, db []string, n int) ([]*proc, string) {
	t.Helper()
	addr := freeAddr(t)
	var ps []*proc
	for i := range n {
		a := args(db, "serve", "--config", cfg, "--shutdown-grace", "2s", "--kill-grace", "1s")
		if i == 0 {
			a = append(a, "--listen", addr)
		}
		ps = append(ps, start(t, dir, a...))
	}
	return ps, addr
}

// stopReplicas sends SIGTERM to every replica and checks they exit 0.
func stopReplicas(t *testing.T, ps []*proc) {
	t.Helper()
	for _, p := range ps {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range ps {
		if code := p.wait(t, 20*time.Second); code != 0 {
			t.Errorf("serve exited %d after SIGTERM, want 0; stderr:\n%s", code, p.stderr.String())
		}
	}
}

// checkSlotsOnce fails the test unless every line of lines is an RFC 3339
// UTC slot, none appears twice and, when contiguous, the slots from the
// first to the last are consecutive seconds.
func checkSlotsOnce(t *testing.T, lines []string, contiguous bool) {
	t.Helper()
	seen := map[time.Time]bool{}
	var first, last time.Time
	for _, l := range lines {
		slot, err := time.Parse(time.RFC3339, l)
		if err != nil || !strings.HasSuffix(l, "Z") {
			t.Errorf("slot %q is not RFC 3339 UTC", l)
			continue
		}
		if seen[slot] {
			t.Errorf("slot %s ran twice", l)
		}
		seen[slot] = true
		if first.IsZero() || slot.Before(first) {
			first = slot
		}
		if slot.After(last) {
			last = slot
		}
	}
	if !contiguous || first.IsZero() {
		return
	}
	for s := first; !s.After(last); s = s.Add(time.Second) {
		if !seen[s] {
			t.Errorf("slot %s, between the first %s and the last %s, never ran", s.Format(time.RFC3339), first.Format(time.RFC3339), last.Format(time.RFC3339))
		}
	}
	if t.Failed() {
		t.Logf("all slots:\n%s", strings.Join(lines, "\n"))
	}
}

// TestServeE2EThreeReplicasPostgres runs three replicas on one PostgreSQL
// schema: after about eight slots of a job every second, every slot from
// the first to the last ran exactly once. The job allows overlap, so a
// run slowed past a second by a loaded machine does not turn the next slot
// into a (correct) skip: each slot is claimed on its own.
func TestServeE2EThreeReplicasPostgres(t *testing.T) {
	t.Parallel()
	_, schema := pgtest.Schema(t) // dropped at cleanup
	db := []string{"--database", pgtest.URL(t), "--schema", schema}
	dir := t.TempDir()
	out := filepath.Join(dir, "slots.txt")
	cfg := writeConfig(t, dir, everySecondConfig(out, "allow"))
	ps, _ := startReplicas(t, dir, cfg, db, 3)
	waitForSlots(t, out, 8, 30*time.Second, ps...)
	stopReplicas(t, ps)
	lines := slotLines(out)
	checkSlotsOnce(t, lines, true)
	t.Logf("%d slots, %d lines, three replicas", distinct(lines), len(lines))
	if t.Failed() {
		_, rows, _ := runCLI(t, dir, args(db, "logs", "every-second", "-n", "100")...)
		t.Logf("the job's runs:\n%s", rows)
	}
}

// TestServeE2EThreeReplicasMySQL is TestServeE2EThreeReplicasPostgres on
// MySQL or MariaDB (the machine's server, a database of the test's own):
// three serve replicas, a job every second, every slot once.
func TestServeE2EThreeReplicasMySQL(t *testing.T) {
	t.Parallel()
	db := []string{"--database", mytest.Database(t)}
	dir := t.TempDir()
	out := filepath.Join(dir, "slots.txt")
	cfg := writeConfig(t, dir, everySecondConfig(out, "allow"))
	ps, _ := startReplicas(t, dir, cfg, db, 3)
	waitForSlots(t, out, 8, 30*time.Second, ps...)
	stopReplicas(t, ps)
	lines := slotLines(out)
	checkSlotsOnce(t, lines, true)
	t.Logf("%d slots, %d lines, three replicas", distinct(lines), len(lines))
	if t.Failed() {
		_, rows, _ := runCLI(t, dir, args(db, "logs", "every-second", "-n", "100")...)
		t.Logf("the job's runs:\n%s", rows)
	}
}

// apiPut sends PUT body to url with the admin token, once p serves, and
// returns the status and the JSON body.
func apiPut(t *testing.T, p *proc, url, body string) (int, map[string]any) {
	t.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	waitHTTP(t, p, u.Scheme+"://"+u.Host, "/healthz")
	req, err := http.NewRequest(http.MethodPut, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("PUT %s: %v", url, err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// TestServeE2EPauseThroughAPI: a pause sent to one replica's REST API stops
// the job on all three from the next slot (at most one run already under
// way still lands), and removing the override brings it back.
func TestServeE2EPauseThroughAPI(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, db []string) {
		if db[0] == "--sqlite" {
			db = nil // the config's default: cronfence.db beside it
		}
		dir := t.TempDir()
		out := filepath.Join(dir, "slots.txt")
		cfg := writeConfig(t, dir, everySecondConfig(out, "skip"))
		ps, addr := startReplicas(t, dir, cfg, db, 3)
		url := "http://" + addr + "/api/admin/cron/every-second"
		waitForSlots(t, out, 3, 30*time.Second, ps...)

		code, body := apiPut(t, ps[0], url, `{"enabled": false, "note": "e2e pause"}`)
		if code != http.StatusOK {
			t.Fatalf("PUT enabled=false: %d %v", code, body)
		}
		paused := len(slotLines(out))
		// Three more slots pass; at most the run already claimed lands.
		time.Sleep(3500 * time.Millisecond)
		after := slotLines(out)
		if len(after) > paused+1 {
			t.Fatalf("%d slots ran after the pause (had %d at the PUT's answer), want at most one in flight:\n%s",
				len(after)-paused, paused, strings.Join(after, "\n"))
		}
		t.Logf("%d slot(s) in flight at the pause landed after the PUT's answer", len(after)-paused)
		for _, p := range ps {
			select {
			case <-p.done:
				t.Fatalf("a replica exited with %d while paused; stderr:\n%s", p.code, p.stderr.String())
			default:
			}
		}

		code, body = apiPut(t, ps[0], url, `{"enabled": null}`)
		if code != http.StatusOK {
			t.Fatalf("PUT enabled=null: %d %v", code, body)
		}
		waitForSlots(t, out, distinct(after)+2, 15*time.Second, ps...)
		stopReplicas(t, ps)
		checkSlotsOnce(t, slotLines(out), false)
	})
}
