package main

import (
	"context"
	"database/sql"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	_ "modernc.org/sqlite"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin"
	"github.com/cronfence/cronfence/cmd/cronfence/internal/config"
	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
	"github.com/cronfence/cronfence/store/sqlite"
)

// migratedSQLite returns a migrated SQLite store on path, closed at cleanup.
func migratedSQLite(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st
}

func heartbeatNow(t *testing.T, m store.Monitor, owner string) {
	t.Helper()
	if _, err := m.ReplicaHeartbeat(context.Background(), store.Replica{Owner: owner, Host: "test", PID: 1, Timers: true}); err != nil {
		t.Fatal(err)
	}
}

// monitorPass takes or renews the absence checks' lease as owner, as the
// replica running the checks does on every pass.
func monitorPass(t *testing.T, st store.Store, owner string) {
	t.Helper()
	ctx := context.Background()
	l, err := st.LeaseGet(ctx, cronfence.MonitorLeaseName)
	if err == nil && l.Owner == owner {
		if _, err := st.LeaseRenew(ctx, store.LeaseRenewParams{LeaseRef: l.Ref(), TTL: time.Minute}); err == nil {
			return
		}
	}
	if _, ok, err := st.LeaseAcquire(ctx, store.LeaseAcquireParams{Name: cronfence.MonitorLeaseName, Owner: owner, TTL: time.Minute}); err != nil || !ok {
		t.Fatalf("taking %s: %v %v", cronfence.MonitorLeaseName, ok, err)
	}
}

func raise(t *testing.T, m store.Monitor, kind store.AlertKind, subject, msg string) {
	t.Helper()
	if _, err := m.AlertRaise(context.Background(), store.AlertRaiseParams{Kind: kind, Subject: subject, Message: msg, RaisedBy: "test"}); err != nil {
		t.Fatal(err)
	}
}

// wantCheck runs check and asserts its exit status and that stderr says why.
func wantCheck(t *testing.T, dir string, code int, stderrHas string, args ...string) (stdout string) {
	t.Helper()
	got, out, errOut := runCLI(t, dir, append([]string{"check"}, args...)...)
	if got != code || !strings.Contains(errOut, stderrHas) {
		t.Fatalf("check %v: exit %d, stderr %q; want exit %d and %q (stdout %q)", args, got, errOut, code, stderrHas, out)
	}
	return out
}

// Every state of check on a SQLite file: missing, not migrated, migrated by
// a newer binary, no live replica, healthy, alerting, and alerting with the
// replicas gone quiet.
func TestCheckDirectSQLite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "cronfence.db")
	db := []string{"--sqlite", path}

	wantCheck(t, dir, checkUnknown, "no SQLite database", db...)

	raw, err := sqlite.Open(context.Background(), path, nil) // created, never migrated
	if err != nil {
		t.Fatal(err)
	}
	_ = raw.Close()
	wantCheck(t, dir, checkUnknown, "cannot tell", db...)

	st := migratedSQLite(t, path)
	wantCheck(t, dir, checkUnknown, "no replica sent a heartbeat within 30s (0 in the registry)", db...)

	heartbeatNow(t, st, "replica-a")
	wantCheck(t, dir, checkUnknown, "no replica has ever run the absence checks", db...)
	monitorPass(t, st, "replica-a")
	if out := wantCheck(t, dir, checkHealthy, "healthy: no open alert, 1 live replica", db...); out != "" {
		t.Fatalf("healthy stdout %q, want nothing", out)
	}
	// --config finds the file through its sqlite: key. Run elsewhere: in
	// dir, --sqlite's default cronfence.db is that very file, so check
	// would pass with the key ignored.
	cfgDir := t.TempDir()
	cfg := writeConfig(t, cfgDir, "sqlite: "+path+"\njobs:\n  - name: nightly\n    schedule: \"@daily\"\n    shell: \"true\"\n")
	wantCheck(t, cfgDir, checkHealthy, "healthy", "--config", cfg)

	raise(t, st, store.AlertDeadlineMissed, "nightly", "slot 2026-11-30T02:00:00Z\nnot completed by its deadline")
	raise(t, st, store.AlertSkipStreak, "hourly", "5 skips in a row")
	out := wantCheck(t, dir, checkAlerting, "alerting: 2 open alert(s), 1 live replica(s)", db...)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "skip_streak\thourly\t") ||
		!strings.HasPrefix(lines[1], "deadline_missed\tnightly\t") || !strings.HasSuffix(lines[1], "\tslot 2026-11-30T02:00:00Z not completed by its deadline") {
		t.Fatalf("alert lines: %q", lines)
	}
	if _, _, err := st.AlertResolve(context.Background(), store.AlertSkipStreak, "hourly"); err != nil {
		t.Fatal(err)
	}
	if out := wantCheck(t, dir, checkAlerting, "1 open alert(s)", db...); strings.Count(out, "\n") != 1 {
		t.Fatalf("after one resolved: %q", out)
	}

	// The heartbeat goes stale: the open alert is printed, but nobody is
	// watching, so check cannot tell.
	time.Sleep(20 * time.Millisecond)
	out = wantCheck(t, dir, checkUnknown, "no replica sent a heartbeat within 10ms (1 in the registry)", append(db, "--stale-after", "10ms")...)
	if !strings.HasPrefix(out, "deadline_missed\tnightly\t") {
		t.Fatalf("stale: stdout %q", out)
	}
	// A replica is live, but the checks stopped running a while ago.
	time.Sleep(1100 * time.Millisecond)
	heartbeatNow(t, st, "replica-a")
	wantCheck(t, dir, checkUnknown, "on replica-a (more than 1s)", append(db, "--stale-after", "1s")...)

	// A newer binary migrated the file.
	sdb, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	if _, err := sdb.Exec(`INSERT INTO cronfence_schema_migrations (version, applied_at) VALUES (999, 0)`); err != nil {
		t.Fatal(err)
	}
	wantCheck(t, dir, checkUnknown, "999", db...)

	// Usage errors exit 2 too, never 1.
	wantCheck(t, dir, checkUnknown, "--stale-after must be positive", append(db, "--stale-after=-1s")...)
	wantCheck(t, dir, checkUnknown, "--server needs --token", "--server", "http://127.0.0.1:1")
}

// check on PostgreSQL: healthy, alerting, then the server stopped (and an
// address where nothing listens): cannot tell.
func TestCheckDirectPostgresDown(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a throwaway PostgreSQL cluster")
	}
	cluster := pgtest.NewCluster(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, cluster.URL())
	if err != nil {
		t.Fatal(err)
	}
	st, err := postgres.New(pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	heartbeatNow(t, st, "replica-pg")
	monitorPass(t, st, "replica-pg")
	dir := t.TempDir()
	db := []string{"--database", cluster.URL()}
	wantCheck(t, dir, checkHealthy, "healthy", db...)
	raise(t, st, store.AlertLeaseStuck, "nightly", "held by generation 7 for 3h")
	if out := wantCheck(t, dir, checkAlerting, "alerting", db...); !strings.HasPrefix(out, "lease_stuck\tnightly\t") {
		t.Fatalf("alerting stdout %q", out)
	}
	pool.Close()
	cluster.Stop(t)
	wantCheck(t, dir, checkUnknown, "cannot tell", db...)
	wantCheck(t, dir, checkUnknown, "cannot tell", "--database", "postgres://postgres@127.0.0.1:1/none?sslmode=disable", "--timeout", "3s")
}

// check --server against a real serve --listen: healthy, alerting, a wrong
// token and a server that is gone all answer with the right status.
func TestCheckServerMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "cronfence.db")
	cfg := writeConfig(t, dir, `sqlite: `+path+`
tokens:
  - name: probe
    role: read
    token: r3ad
jobs:
  - name: yearly
    schedule: "0 0 1 1 *"
    shell: "true"
`)
	addr := freeAddr(t)
	srv := start(t, dir, "serve", "--config", cfg, "--listen", addr)
	st := migratedSQLite(t, path)
	// serve records itself and runs the absence checks (taking their
	// lease) on its own; this row only makes the test independent of when
	// its first heartbeat lands.
	heartbeatNow(t, st, "probe-replica")
	url := "http://" + addr
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, _, errOut := runCLI(t, dir, "check", "--server", url, "--token", "r3ad")
		if code == checkHealthy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("check --server never healthy: %d %q; serve stderr:\n%s", code, errOut, srv.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A kind no absence check owns, so no monitor resolves it under us.
	raise(t, st, store.AlertKind("test_probe"), "yearly", "raised by the test")
	if out := wantCheck(t, dir, checkAlerting, "alerting", "--server", url, "--token", "r3ad"); !strings.HasPrefix(out, "test_probe\tyearly\t") {
		t.Fatalf("alerting stdout %q", out)
	}
	wantCheck(t, dir, checkUnknown, "UNAUTHORIZED", "--server", url, "--token", "wrong")
	stopServe(t, srv)
	wantCheck(t, dir, checkUnknown, "cannot tell", "--server", url, "--token", "r3ad")
}

// check's default bound is the REST API's, so both agree on "live"; with a
// serve file it follows the file's monitor: section.
func TestCheckStaleAfterDefault(t *testing.T) {
	if defaultStaleAfter != admin.DefaultReplicaLiveFor {
		t.Fatalf("--stale-after default %s, want the API's %s", defaultStaleAfter, admin.DefaultReplicaLiveFor)
	}
	for _, tc := range []struct {
		m    config.Monitor
		want time.Duration
	}{
		{config.Monitor{ReplicaStale: 30 * time.Second, CheckEvery: 15 * time.Second}, 30 * time.Second},
		{config.Monitor{ReplicaStale: 30 * time.Second, CheckEvery: time.Minute}, 2 * time.Minute},
		{config.Monitor{ReplicaStale: 5 * time.Minute, CheckEvery: time.Second}, 5 * time.Minute},
		{config.Monitor{ReplicaStale: 2 * time.Second, CheckEvery: -1}, 10 * time.Second},
	} {
		if got := staleAfterOf(tc.m); got != tc.want {
			t.Errorf("staleAfterOf(%+v) = %s, want %s", tc.m, got, tc.want)
		}
	}
}

// serve --listen serves the dashboard at / beside the API: a page with
// Basic credentials whose password is a token, never without one, and the
// API still by bearer token only.
func TestServeMountsDashboard(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `tokens:
  - name: viewer
    role: read
    token: r3ad
jobs:
  - name: yearly
    schedule: "0 0 1 1 *"
    shell: "true"
`)
	addr := freeAddr(t)
	srv := start(t, dir, "serve", "--config", cfg, "--listen", addr)
	get := func(path string, set func(*http.Request)) (int, string) {
		req, err := http.NewRequest("GET", "http://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		set(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	none := func(*http.Request) {}
	waitHTTP(t, srv, "http://"+addr, "/readyz")
	if code, _ := get("/", none); code != 401 {
		t.Fatalf("GET / without credentials: %d", code)
	}
	code, body := get("/", func(r *http.Request) { r.SetBasicAuth("me", "r3ad") })
	if code != 200 || !strings.Contains(body, `<a href="/job?name=yearly">yearly</a>`) {
		t.Fatalf("GET / with Basic: %d\n%s", code, body)
	}
	if code, _ := get("/api/admin/cron", func(r *http.Request) { r.SetBasicAuth("me", "r3ad") }); code != 401 {
		t.Fatalf("API with Basic: %d", code)
	}
	if code, _ := get("/api/admin/cron", func(r *http.Request) { r.Header.Set("Authorization", "Bearer r3ad") }); code != 200 {
		t.Fatalf("API with bearer: %d", code)
	}
	stopServe(t, srv)
}
