package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cronfence/cronfence/cmd/cronfence/internal/config"
	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/internal/scrape"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
	"github.com/cronfence/cronfence/store/sqlite"
)

// openArgs opens the store that the db arguments of forEachStore name, to
// read what serve recorded.
func openArgs(t *testing.T, db []string) store.Store {
	t.Helper()
	ctx := context.Background()
	switch db[0] {
	case "--sqlite":
		s, err := sqlite.Open(ctx, db[1], nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	case "--database":
		pool, err := pgxpool.New(ctx, db[1])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		s, err := postgres.New(pool, &postgres.Config{Schema: db[3]})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	t.Fatalf("no store in %v", db)
	return nil
}

// TestServeMetricsMatchWhatRan runs a real `serve --listen` with three
// jobs every second (one succeeds, one fails, one outlasts its interval
// and is skipped), pauses them through the REST API, and scrapes the real
// /metrics without a token: promlint and, where installed, the real `promtool check metrics`
// find nothing, and the values equal what the commands wrote and what the
// store recorded.
func TestServeMetricsMatchWhatRan(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, db []string) {
		dir := t.TempDir()
		if db[0] == "--sqlite" {
			// serve's SQLite file is the config's: cronfence.db beside it.
			db = []string{"--sqlite", filepath.Join(dir, "cronfence.db")}
		}
		serveDB := db
		if db[0] == "--sqlite" {
			serveDB = nil
		}
		ok, failed := filepath.Join(dir, "ok.txt"), filepath.Join(dir, "failed.txt")
		cfg := writeConfig(t, dir, `tokens:
  - name: ops
    role: admin
    token: s3cret
defaults:
  schedule: "* * * * * *"
  lease_ttl: 5s
jobs:
  - name: ok
    shell: echo "$CRONFENCE_SLOT" >> `+ok+`
  - name: failing
    max_attempts: 1
    shell: echo "$CRONFENCE_SLOT" >> `+failed+`; exit 3
  - name: slow
    shell: sleep 2.5
`)
		addr := freeAddr(t)
		p := start(t, dir, args(serveDB, "serve", "--config", cfg, "--listen", addr, "--shutdown-grace", "1s", "--kill-grace", "500ms")...)
		url := "http://" + addr + "/metrics"
		get := func() *scrape.Page {
			t.Helper()
			deadline := time.Now().Add(20 * time.Second)
			for {
				page, err := scrape.Get(url) // no Authorization header
				if err == nil {
					return page
				}
				select {
				case <-p.done:
					t.Fatalf("serve exited with %d; stderr:\n%s", p.code, p.stderr.String())
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("GET /metrics: %v", err)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		waitForSlots(t, ok, 3, 30*time.Second, p)
		deadline := time.Now().Add(30 * time.Second)
		for s := get().Sum("cronfence_skips_total", "job", "slow"); s < 1; s = get().Sum("cronfence_skips_total", "job", "slow") {
			if time.Now().After(deadline) {
				t.Fatal("no skip of the slow job after 30s")
			}
			time.Sleep(50 * time.Millisecond)
		}
		for _, job := range []string{"ok", "failing", "slow"} {
			if code, body := apiPut(t, p, "http://"+addr+"/api/admin/cron/"+job, `{"enabled": false}`); code != http.StatusOK {
				t.Fatalf("pause %s: %d %v", job, code, body)
			}
		}
		// Quiet: every job has had a claim refused as paused (later claims
		// are refused too), and every claim won has ended (its handler
		// starts on a goroutine of its own, maybe after the next claim).
		var page *scrape.Page
		for deadline := time.Now().Add(30 * time.Second); ; {
			page = get()
			quiet := len(page.Families["cronfence_lease_age_seconds"].GetMetric()) == 0
			for _, job := range []string{"ok", "failing", "slow"} {
				paused, _ := page.Value("cronfence_claims_total", "job", job, "result", "paused")
				won, _ := page.Value("cronfence_claims_total", "job", job, "result", "won")
				if paused < 1 || won != page.Sum("cronfence_runs_total", "job", job) {
					quiet = false
				}
			}
			if quiet {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("serve never went quiet after the pause:\n%s", page.Text)
			}
			time.Sleep(50 * time.Millisecond)
		}

		if problems, err := page.Lint(); err != nil || len(problems) > 0 {
			t.Fatalf("promlint on the real /metrics: %v %v\n%s", err, strings.Join(problems, "\n"), page.Text)
		}
		// The real promtool, on the exact bytes served.
		page.Promtool(t)
		value := func(name string, labels ...string) float64 {
			v, _ := page.Value(name, labels...)
			return v
		}
		okSlots, failedSlots := slotLines(ok), slotLines(failed)
		runs, err := openArgs(t, db).RunList(context.Background(), store.RunListParams{Job: "slow", Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		var slowRuns, slowSkips float64
		for _, r := range runs {
			if r.Skipped {
				slowSkips++
			} else {
				slowRuns++
			}
		}
		lastOK, err := time.Parse(time.RFC3339, okSlots[len(okSlots)-1])
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			what      string
			got, want float64
		}{
			{"runs_total{ok,success} = lines the ok job wrote", value("cronfence_runs_total", "job", "ok", "outcome", "success"), float64(len(okSlots))},
			{"runs_total{ok,failure}", value("cronfence_runs_total", "job", "ok", "outcome", "failure"), 0},
			{"runs_total{failing,failure} = lines the failing job wrote", value("cronfence_runs_total", "job", "failing", "outcome", "failure"), float64(len(failedSlots))},
			{"runs_total{failing,success}", value("cronfence_runs_total", "job", "failing", "outcome", "success"), 0},
			{"runs_total{slow,success} = run rows", value("cronfence_runs_total", "job", "slow", "outcome", "success"), slowRuns},
			{"skips_total{slow} = skip rows", page.Sum("cronfence_skips_total", "job", "slow"), slowSkips},
			{"claims_total{ok,won} = runs", value("cronfence_claims_total", "job", "ok", "result", "won"), float64(len(okSlots))},
			{"fire_latency count{ok} = runs", value("cronfence_fire_latency_seconds", "job", "ok"), float64(len(okSlots))},
			{"fire_latency count{failing} = runs", value("cronfence_fire_latency_seconds", "job", "failing"), float64(len(failedSlots))},
			{"run_duration count{slow} = run rows", value("cronfence_run_duration_seconds", "job", "slow"), slowRuns},
			{"last_completed_slot{ok} = the last slot written", value("cronfence_last_completed_slot_timestamp_seconds", "job", "ok"), float64(lastOK.Unix())},
		} {
			if c.got != c.want {
				t.Errorf("%s: got %v, want %v", c.what, c.got, c.want)
			}
		}
		if len(okSlots) < 3 || len(failedSlots) < 1 || slowSkips < 1 {
			t.Errorf("the run was too short to mean much: %d ok, %d failed, %v skips", len(okSlots), len(failedSlots), slowSkips)
		}
		// The failing job never completes a slot.
		if _, ok := page.Value("cronfence_last_completed_slot_timestamp_seconds", "job", "failing"); ok {
			t.Error("last_completed_slot_timestamp_seconds set for a job that never succeeded")
		}
		for _, op := range []string{"SlotClaimBatch", "SlotFinish"} {
			if n := value("cronfence_store_round_trip_seconds", "op", op); n < 1 {
				t.Errorf("store_round_trip_seconds{op=%s} count %v, want round trips timed", op, n)
			}
		}
		if _, ok := page.Value("cronfence_clock_offset_seconds"); !ok {
			t.Error("clock_offset_seconds missing")
		}
		if _, ok := page.Value("process_start_time_seconds"); !ok {
			t.Error("the process collector is missing")
		}
		t.Logf("%d ok, %d failed, %v slow runs, %v skips; %s", len(okSlots), len(failedSlots), slowRuns, slowSkips,
			fmt.Sprint(len(page.Families), " families"))
	})
}

// heldLease is the lease gauges of one job on a /metrics page.
type heldLease struct {
	holder              string
	age, unrenewed, gen float64
	series              int
}

func leaseOf(p *scrape.Page, job string) heldLease {
	var l heldLease
	for _, m := range p.Families["cronfence_lease_age_seconds"].GetMetric() {
		var j, h string
		for _, lp := range m.GetLabel() {
			switch lp.GetName() {
			case "job":
				j = lp.GetValue()
			case "holder":
				h = lp.GetValue()
			}
		}
		if j != job {
			continue
		}
		l.series++
		l.holder, l.age = h, m.GetGauge().GetValue()
		l.unrenewed, _ = p.Value("cronfence_lease_unrenewed_seconds", "job", job, "holder", h)
		l.gen, _ = p.Value("cronfence_lease_generation", "job", job, "holder", h)
	}
	return l
}

// pidOf is the process id in an owner id (host:pid:random).
func pidOf(owner string) int {
	parts := strings.Split(owner, ":")
	if len(parts) < 3 {
		return 0
	}
	pid, _ := strconv.Atoi(parts[len(parts)-2])
	return pid
}

// Two `serve --listen` replicas, a job whose run lasts a minute: both
// /metrics pages show its lease with the same holder and generation.
// SIGSTOP the holder (a stuck owner: it answers nothing, renews nothing)
// and the other replica's /metrics keeps showing that holder's lease, its
// age and time unrenewed rising past a renewal period, until the lease
// expires and the other replica takes the job over at the next generation.
// On PostgreSQL, the many-host store: on SQLite a process frozen inside a
// write transaction would also hold the file's write lock, a hazard of its
// own (one host), not the one shown here.
func TestServeMetricsShowAStoppedHoldersLease(t *testing.T) {
	t.Parallel()
	_, schema := pgtest.Schema(t)
	serveDB := []string{"--database", pgtest.URL(t), "--schema", schema}
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `jobs:
  - name: long
    schedule: "* * * * * *"
    lease_ttl: 6s
    shell: sleep 60
`)
	addrs := []string{freeAddr(t), freeAddr(t)}
	var ps []*proc
	for _, addr := range addrs {
		ps = append(ps, start(t, dir, args(serveDB, "serve", "--config", cfg, "--listen", addr, "--shutdown-grace", "1s", "--kill-grace", "500ms")...))
	}
	// The bounds below are safety nets against a hang, not measurements: on
	// a 2-core machine running the other packages' tests beside this one, a
	// replica built with -race has taken over 20 s to start serving.
	scrapeOf := func(i int) *scrape.Page {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; {
			page, err := scrape.Get("http://" + addrs[i] + "/metrics")
			if err == nil {
				return page
			}
			select {
			case <-ps[i].done:
				t.Fatalf("serve exited with %d; stderr:\n%s", ps[i].code, ps[i].stderr.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET /metrics of replica %d: %v", i, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// until polls replica i's lease of long until cond holds.
	until := func(i int, what string, cond func(heldLease) bool) heldLease {
		t.Helper()
		var l heldLease
		for deadline := time.Now().Add(time.Minute); ; {
			page := scrapeOf(i)
			if l = leaseOf(page, "long"); cond(l) {
				return l
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d: %s: not within a minute; last %+v\n%s", i, what, l, page.Text)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	first := until(0, "the lease of long shows", func(l heldLease) bool { return l.series == 1 })
	holder := -1
	for i, p := range ps {
		if p.cmd.Process.Pid == pidOf(first.holder) {
			holder = i
		}
	}
	if holder < 0 {
		t.Fatalf("holder %q is neither replica (pids %d, %d)", first.holder, ps[0].cmd.Process.Pid, ps[1].cmd.Process.Pid)
	}
	other := 1 - holder
	seen := until(other, "the other replica shows the same holding", func(l heldLease) bool {
		return l.series == 1 && l.holder == first.holder && l.gen == first.gen
	})

	if err := ps[holder].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps[holder].cmd.Process.Signal(syscall.SIGCONT) })
	// Renewals come every 2s (a third of the TTL): more than 3s
	// unrenewed is the stopped holder's lease, still shown.
	stuck := until(other, "the stopped holder's lease ages unrenewed", func(l heldLease) bool {
		return l.holder == first.holder && l.unrenewed > 3
	})
	if stuck.gen != first.gen || stuck.age <= seen.age || stuck.age < stuck.unrenewed {
		t.Errorf("the stopped holder's lease %+v, earlier %+v: want the same generation, older, age at least the time unrenewed", stuck, seen)
	}
	// At expiry the other replica takes over, one generation up.
	taken := until(other, "the other replica takes the job over", func(l heldLease) bool {
		return l.series == 1 && l.holder != first.holder
	})
	if pidOf(taken.holder) != ps[other].cmd.Process.Pid || taken.gen != first.gen+1 {
		t.Errorf("after expiry the lease is %+v; want the other replica (pid %d) at generation %v", taken, ps[other].cmd.Process.Pid, first.gen+1)
	}
}

// serve's wiring times each round trip once: on PostgreSQL the pool's
// tracer times the query and the store wrapper only names it, on SQLite
// the wrapper times the call. One SlotListInterrupted (one query) counts
// exactly one round trip; two would mean both timed it, none that neither
// did.
func TestServeTimesEachRoundTripOnce(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, db []string) {
		ctx := context.Background()
		g := &Globals{}
		switch db[0] {
		case "--sqlite":
			g.SQLite = db[1]
		case "--database":
			g.Database, g.Schema = db[1], db[3]
		}
		obs, err := newObservability(&config.File{}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		g.tracer = obs.tracer()
		d, err := g.openMigrated(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer d.close()
		if _, err := obs.instrument(d.Store).SlotListInterrupted(ctx); err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(obs.mount(http.NotFoundHandler()))
		defer srv.Close()
		page, err := scrape.Get(srv.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := page.Value("cronfence_store_round_trip_seconds", "op", "SlotListInterrupted"); n != 1 {
			t.Fatalf("store_round_trip_seconds{op=SlotListInterrupted} count %v after one call of one query, want 1\n%s", n, page.Text)
		}
	})
}
