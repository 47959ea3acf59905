package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/internal/wait"
)

// storedReplicas are three serve replicas sharing one database: a
// serves the REST API (and registers no kind unless asked); b and c register the kind
// "tick", whose command appends a line to out when a run starts
// ("start JOB SLOT REPLICA ARGS") and when it ends ("end JOB SLOT"),
// sleeping two seconds between when the arguments ask for it.
type storedReplicas struct {
	a, b, c *proc
	api     string // a's base URL
	out     string
	aRuns   bool // a registers tick too
}

// startStoredReplicas starts storedReplicas on the database of db (the
// flags of forEachStore) in dir, each reading the stored schedules every
// 200ms where no notice tells it of a change.
func startStoredReplicas(t *testing.T, dir string, db []string, aRuns bool) *storedReplicas {
	t.Helper()
	head := ""
	if len(db) == 2 && db[0] == "--sqlite" {
		head, db = "sqlite: "+db[1]+"\n", nil
	}
	head += `tokens:
  - name: ops
    role: admin
    token: s3cret
schedules:
  poll_every: 200ms
`
	out := filepath.Join(dir, "runs.out")
	tick := func(replica string) string {
		return `kinds:
  tick:
    shell: |
      echo "start $CRONFENCE_JOB $CRONFENCE_SLOT $REPLICA $CRONFENCE_ARGS" >> ` + out + `
      case "$CRONFENCE_ARGS" in *'"sleep":true'*) sleep 2 ;; esac
      echo "end $CRONFENCE_JOB $CRONFENCE_SLOT" >> ` + out + `
    env: {REPLICA: ` + replica + `}
`
	}
	cfg := func(name, rest string) string {
		path := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(path, []byte(head+rest), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	r := &storedReplicas{out: out, aRuns: aRuns}
	addr := freeAddr(t)
	r.api = "http://" + addr + "/api/admin/cron"
	serve := func(cfg string, extra ...string) *proc {
		return start(t, dir, append(args(db, "serve", "--config", cfg, "--shutdown-grace", "5s", "--kill-grace", "1s"), extra...)...)
	}
	aKinds := ""
	if aRuns {
		aKinds = tick("a")
	}
	r.a = serve(cfg("a", aKinds), "--listen", addr)
	r.b = serve(cfg("b", tick("b")))
	r.c = serve(cfg("c", tick("c")))
	waitHTTP(t, r.a, "http://"+addr, "/readyz")
	return r
}

// call sends method url with the admin token and body (none when "") to
// a and returns the status and the body.
func (r *storedReplicas) call(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, r.api+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// create POSTs a schedule to a. Its kind is registered by b and c only:
// a accepts it once one of them has told the registry it knows it, so
// create retries while a answers that no live replica does.
func (r *storedReplicas) create(t *testing.T, body string) {
	t.Helper()
	var code int
	var answer []byte
	wait.For(t, 20*time.Second, func() bool {
		code, answer = r.call(t, "POST", "/schedules", body)
		return code != http.StatusBadRequest || !bytes.Contains(answer, []byte(`no live replica registers it`))
	}, func() string { return "a never learned that b or c registers the kind tick: " + string(answer) })
	if code != http.StatusCreated {
		t.Fatalf("POST /schedules %s: %d %s", body, code, answer)
	}
}

// runLine is a line of storedReplicas.out.
type runLine struct {
	start         bool
	job, replica  string
	slot          time.Time
	args, written string
}

// lines reads out's whole lines.
func (r *storedReplicas) lines(t *testing.T) []runLine {
	t.Helper()
	var out []runLine
	for _, l := range slotLines(r.out) {
		f := strings.SplitN(l, " ", 5)
		if len(f) < 3 {
			t.Fatalf("line %q of %s", l, r.out)
		}
		slot, err := time.Parse(time.RFC3339Nano, f[2])
		if err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		rl := runLine{start: f[0] == "start", job: f[1], slot: slot, written: l}
		if rl.start {
			if len(f) != 5 {
				t.Fatalf("start line %q", l)
			}
			rl.replica, rl.args = f[3], f[4]
		}
		out = append(out, rl)
	}
	return out
}

// starts returns job's start lines, failing t when a slot started twice
// or on a replica that does not register the kind.
func (r *storedReplicas) starts(t *testing.T, job string) []runLine {
	t.Helper()
	seen := map[time.Time]string{}
	var out []runLine
	for _, l := range r.lines(t) {
		if !l.start || l.job != job {
			continue
		}
		if prev, ok := seen[l.slot]; ok {
			t.Errorf("%s's slot %s started twice: %q and %q", job, l.slot.Format(time.RFC3339), prev, l.written)
		}
		if l.replica != "b" && l.replica != "c" && (l.replica != "a" || !r.aRuns) {
			t.Errorf("%s ran on replica %q, which does not register its kind", job, l.replica)
		}
		seen[l.slot] = l.written
		out = append(out, l)
	}
	return out
}

// ended reports whether job's run of slot wrote its end line.
func (r *storedReplicas) ended(t *testing.T, job string, slot time.Time) bool {
	t.Helper()
	for _, l := range r.lines(t) {
		if !l.start && l.job == job && l.slot.Equal(slot) {
			return true
		}
	}
	return false
}

// waitStarts waits until job has started at least n slots matching
// keep, and returns them.
func (r *storedReplicas) waitStarts(t *testing.T, job string, n int, keep func(runLine) bool) []runLine {
	t.Helper()
	var got []runLine
	wait.For(t, 30*time.Second, func() bool {
		got = got[:0]
		for _, l := range r.starts(t, job) {
			if keep == nil || keep(l) {
				got = append(got, l)
			}
		}
		return len(got) >= n
	}, func() string {
		b, _ := os.ReadFile(r.out)
		return job + ": fewer than the starts awaited in:\n" + string(b) + "\nb's stderr:\n" + r.b.stderr.String()
	})
	return got
}

// waitRunning waits for a run of job that started and has not ended,
// and returns its start line.
func (r *storedReplicas) waitRunning(t *testing.T, job string) runLine {
	t.Helper()
	var running runLine
	wait.For(t, 30*time.Second, func() bool {
		ended := map[time.Time]bool{}
		var starts []runLine
		for _, l := range r.lines(t) {
			switch {
			case l.job != job:
			case l.start:
				starts = append(starts, l)
			default:
				ended[l.slot] = true
			}
		}
		for _, l := range starts {
			if !ended[l.slot] {
				running = l
				return true
			}
		}
		return false
	}, func() string {
		b, _ := os.ReadFile(r.out)
		return job + " has no run in progress in:\n" + string(b)
	})
	return running
}

// Stored schedules through one replica's REST API, run by the other two
// as real processes, on every store:
//
//   - created on a, which does not register its kind: run by b and c
//     from the next slot, each slot once, with its arguments;
//   - edited while a run holds the lease: that run ends with the
//     arguments it started with, the following runs have the new
//     arguments and follow the new spec, no slot runs twice;
//   - deleted while a run holds the lease: that run ends and its row is
//     kept (GET …/logs answers it), and no slot starts after the delete.
func TestStoredSchedulesE2E(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, db []string) {
		dir := t.TempDir()
		r := startStoredReplicas(t, dir, db, false)
		r.create(t, `{"name":"tenant-1","spec":"* * * * * *","kind":"tick","args":{"tenant":1},"overlap":"allow"}`)
		r.create(t, `{"name":"edited","spec":"* * * * * *","kind":"tick","args":{"v":1,"sleep":true}}`)
		r.create(t, `{"name":"deleted","spec":"* * * * * *","kind":"tick","args":{"sleep":true}}`)

		for _, l := range r.waitStarts(t, "tenant-1", 3, nil) {
			if l.args != `{"tenant":1}` {
				t.Errorf("tenant-1 ran with CRONFENCE_ARGS %q, want its arguments as stored", l.args)
			}
		}

		// The edit: while a run of the old settings sleeps in its lease.
		held := r.waitRunning(t, "edited")
		code, body := r.call(t, "PUT", "/schedules/edited", `{"version":1,"spec":"*/3 * * * * *","kind":"tick","args":{"v":2}}`)
		if code != http.StatusOK || !bytes.Contains(body, []byte(`"version":2`)) {
			t.Fatalf("PUT /schedules/edited: %d %s", code, body)
		}
		edited := time.Now()
		code, body = r.call(t, "PUT", "/schedules/edited", `{"version":1,"spec":"@daily","kind":"tick"}`)
		if code != http.StatusConflict || !bytes.Contains(body, []byte(`"currentVersion":2`)) {
			t.Fatalf("PUT with the stale version 1: %d %s, want 409 naming version 2", code, body)
		}

		// The delete: while a run sleeps in its lease.
		last := r.waitRunning(t, "deleted")
		if code, body := r.call(t, "DELETE", "/schedules/deleted", ""); code != http.StatusOK {
			t.Fatalf("DELETE /schedules/deleted: %d %s", code, body)
		}
		deleted := time.Now()

		newer := r.waitStarts(t, "edited", 2, func(l runLine) bool { return l.args == `{"v":2}` })
		wait.For(t, 20*time.Second, func() bool {
			return r.ended(t, "edited", held.slot) && r.ended(t, "deleted", last.slot)
		}, func() string { return "the runs in progress at the edit and the delete never ended" })
		for _, l := range newer {
			if l.slot.Second()%3 != 0 {
				t.Errorf("a run with the new arguments at %s, not a slot of the new spec */3", l.slot.Format(time.RFC3339))
			}
		}
		for _, l := range r.starts(t, "edited") {
			// The replicas apply a change within a poll (200ms) of it, at
			// once on PostgreSQL; 5s leaves a loaded machine room.
			if l.args != `{"v":2}` && l.slot.After(edited.Add(5*time.Second)) {
				t.Errorf("slot %s ran with the old arguments %s, long after the edit at %s", l.slot.Format(time.RFC3339), l.args, edited.Format(time.RFC3339Nano))
			}
		}
		// Seven seconds after the delete, a slot started by a replica that
		// missed it would be seen.
		time.Sleep(time.Until(deleted.Add(7 * time.Second)))
		for _, l := range r.starts(t, "deleted") {
			if l.slot.After(deleted.Add(5 * time.Second)) {
				t.Errorf("the deleted schedule started slot %s, after its delete at %s", l.slot.Format(time.RFC3339), deleted.Format(time.RFC3339Nano))
			}
		}

		// Its history stays: the run that was in progress is among its logs.
		var logs struct {
			Logs []struct {
				Slot    time.Time `json:"slot"`
				Success bool      `json:"success"`
			} `json:"logs"`
		}
		wait.For(t, 20*time.Second, func() bool {
			code, body := r.call(t, "GET", "/deleted/logs", "")
			if code != http.StatusOK || json.Unmarshal(body, &logs) != nil {
				return false
			}
			for _, run := range logs.Logs {
				if run.Slot.Equal(last.slot) && run.Success {
					return true
				}
			}
			return false
		}, func() string {
			return "the deleted schedule's run of " + last.slot.Format(time.RFC3339) + " is not in its logs"
		})

		stopReplicas(t, []*proc{r.a, r.b, r.c})
		r.starts(t, "tenant-1") // once each, on b or c, to the end
	})
}

// Three hundred schedules created through the REST API while three
// replicas run, each firing once (at a second of the next half minute,
// ten a second): every schedule runs its one slot once, on PostgreSQL,
// where the notices carry the changes to the replicas. Each run starts a
// supervisor, here a binary built with -race (a tenth of a CPU second and
// more each on this 2-core machine, where a thousand at forty a second
// starved the replicas past the store timeout); the schedules have the
// catch-up window a user would give them, so a slot left to catch-up by a
// claim that timed out still runs, once.
func TestThreeHundredStoredSchedulesE2E(t *testing.T) {
	t.Parallel()
	_, schema := pgtest.Schema(t) // dropped at cleanup
	dir := t.TempDir()
	r := startStoredReplicas(t, dir, []string{"--database", pgtest.URL(t), "--schema", schema}, true)

	const n, spread = 300, 30
	first := time.Now().Truncate(time.Second).Add(10 * time.Second)
	want := make([]time.Time, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || t.Failed() {
					return
				}
				slot := first.Add(time.Duration(i%spread) * time.Second)
				if soon := time.Now().Add(3 * time.Second).Truncate(time.Second); slot.Before(soon) {
					slot = soon // a slow machine: later, not missed
				}
				want[i] = slot
				spec := fmt.Sprintf("%d %d %d %d %d *", slot.Second(), slot.Minute(), slot.Hour(), slot.Day(), int(slot.Month()))
				body := fmt.Sprintf(`{"name":"tenant-%04d","spec":%q,"kind":"tick","args":{"tenant":%d},"catchUpWindow":"5m"}`, i, spec, i)
				if code, answer := r.call(t, "POST", "/schedules", body); code != http.StatusCreated {
					t.Errorf("POST %s: %d %s", body, code, answer)
					return
				}
			}
		})
	}
	wg.Wait()
	created := time.Now()
	if t.Failed() {
		t.FailNow()
	}

	ran := map[string]runLine{}
	wait.For(t, 2*time.Minute, func() bool {
		clear(ran)
		for _, l := range r.lines(t) {
			if l.start {
				if prev, twice := ran[l.job]; twice {
					t.Fatalf("%s ran twice: %q and %q", l.job, prev.written, l.written)
				}
				ran[l.job] = l
			}
		}
		return len(ran) == n
	}, func() string { return fmt.Sprintf("%d of the %d schedules ran", len(ran), n) })
	perReplica := map[string]int{}
	for i, slot := range want {
		l := ran[fmt.Sprintf("tenant-%04d", i)]
		perReplica[l.replica]++
		if !l.slot.Equal(slot) {
			t.Errorf("%s ran slot %s, want its one slot %s", l.job, l.slot.Format(time.RFC3339), slot.Format(time.RFC3339))
		}
		if l.args != fmt.Sprintf(`{"tenant":%d}`, i) {
			t.Errorf("%s ran with %s", l.job, l.args)
		}
	}
	t.Logf("%d schedules created in %s (the first slot %s after the start), runs per replica %v",
		n, created.Sub(first.Add(-10*time.Second)).Round(time.Millisecond), 10*time.Second, perReplica)
	stopReplicas(t, []*proc{r.a, r.b, r.c})
}
