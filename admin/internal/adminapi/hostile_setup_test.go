package adminapi_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin/internal/adminapi"
	"github.com/cronfence/cronfence/store/sqlite"
)

// hostileJobs are registered by hostileSetup: names the library accepts
// that a client must escape, or that look like an attack.
var hostileJobs = []string{
	"nightly",
	"reports/daily",
	`it's "quoted"`,
	`'; DROP TABLE cronfence_runs; --`,
	"⏰ backup 🚀",
	"\u202Eevil\u202C",
	"e\u0301\u0301",
	"a%2Fb",
	"../../etc/passwd",
	"line1\nline2",
	"sp ace?#&=",
}

// hostileBundle is a real scheduler (timers off: manual runs only) on a
// migrated SQLite file, behind the API's handler.
type hostileBundle struct {
	handler http.Handler
	store   *sqlite.Store
	db      *sql.DB
}

// hostileSetup builds a hostileBundle. It takes a testing.TB so fuzz
// targets can build one per worker process.
func hostileSetup(tb testing.TB, opts *adminapi.Options) *hostileBundle {
	tb.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(tb.TempDir(), "cronfence.db"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		tb.Fatal(err)
	}
	sched, err := cronfence.New(cronfence.Config{Store: st, Logger: silent, DisableTimers: true, Owner: "replica-1", ShutdownGrace: 5 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	for _, name := range hostileJobs {
		if err := sched.Register(cronfence.Job{
			Name: name, Schedule: "0 6 * * *",
			Handler: func(ctx context.Context, run *cronfence.Run) error { return nil },
		}); err != nil {
			tb.Fatalf("Register(%q): %v", name, err)
		}
	}
	if err := sched.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	if opts == nil {
		opts = &adminapi.Options{}
	}
	opts.Logger = silent
	b := &hostileBundle{store: st, db: st.DB(), handler: adminapi.New(sched, []adminapi.Token{
		{Name: "ops", Role: adminapi.RoleAdmin, Secret: adminSecret},
		{Name: "dash", Role: adminapi.RoleRead, Secret: readSecret},
	}, opts)}
	tb.Cleanup(func() {
		if err := sched.Stop(context.Background()); err != nil {
			tb.Errorf("Stop: %v", err)
		}
		_ = st.Close()
	})
	return b
}

// jobTables are the tables an admin request may change.
var jobTables = []string{"cronfence_leases", "cronfence_slots", "cronfence_job_state", "cronfence_runs"}

// dump returns every row of the job tables as text, to show that a
// rejected request changed nothing.
func (b *hostileBundle) dump(tb testing.TB) string {
	tb.Helper()
	var out []string
	for _, table := range jobTables {
		rows, err := b.db.Query(`SELECT * FROM ` + table)
		if err != nil && strings.Contains(err.Error(), "no such table") { // dropped by TestHostileBrokenStore
			out = append(out, table+" missing")
			continue
		}
		if err != nil {
			tb.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				tb.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s %q", table, vals))
		}
		if err := rows.Close(); err != nil {
			tb.Fatal(err)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// serve sends req through the handler and checks what every answer must
// be: no 5xx but 503, an error body of exactly {"code", "message",
// "details"}, and nothing changed in the database when the request was
// refused. It returns the recorder.
func (b *hostileBundle) serve(tb testing.TB, req *http.Request) *httptest.ResponseRecorder {
	tb.Helper()
	before := b.dump(tb)
	rec := httptest.NewRecorder()
	b.handler.ServeHTTP(rec, req)
	what := fmt.Sprintf("%s %q", req.Method, req.URL.RequestURI())
	if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable {
		tb.Fatalf("%s: %d %s", what, rec.Code, rec.Body)
	}
	if rec.Code >= 400 {
		checkErrorBody(tb, what, rec.Code, rec.Header(), rec.Body.Bytes(), req.Method == http.MethodHead)
		if after := b.dump(tb); after != before {
			tb.Fatalf("%s was refused with %d but changed the database:\nbefore:\n%s\nafter:\n%s", what, rec.Code, before, after)
		}
		return rec
	}
	if req.Method != http.MethodHead && !json.Valid(rec.Body.Bytes()) && rec.Body.String() != "ok\n" {
		tb.Fatalf("%s: %d with a body that is not JSON: %q", what, rec.Code, rec.Body)
	}
	if rec.Code == http.StatusAccepted {
		b.waitRun(tb, rec.Body.Bytes())
	}
	return rec
}

// checkErrorBody checks an error answer: JSON with exactly the keys code
// and message (non-empty strings) and details (null or an object).
func checkErrorBody(tb testing.TB, what string, status int, h http.Header, body []byte, head bool) {
	tb.Helper()
	if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		tb.Fatalf("%s: %d with Content-Type %q", what, status, ct)
	}
	if head {
		return
	}
	var e map[string]json.RawMessage
	if err := json.Unmarshal(body, &e); err != nil {
		tb.Fatalf("%s: %d with a body that is not a JSON object: %q", what, status, body)
	}
	var code, msg string
	if len(e) != 3 || json.Unmarshal(e["code"], &code) != nil || code == "" ||
		json.Unmarshal(e["message"], &msg) != nil || msg == "" || e["details"] == nil ||
		(string(e["details"]) != "null" && e["details"][0] != '{') {
		tb.Fatalf("%s: %d with body %s, want {\"code\", \"message\", \"details\"}", what, status, body)
	}
}

// waitRun waits until the manual run a 202 answered has written its run
// row, so its late write is not taken for a change made by a later,
// refused request.
func (b *hostileBundle) waitRun(tb testing.TB, body []byte) {
	tb.Helper()
	var started struct {
		JobID      string `json:"jobId"`
		Generation int64  `json:"generation"`
	}
	if err := json.Unmarshal(body, &started); err != nil {
		tb.Fatalf("202 body %q: %v", body, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := b.db.QueryRow(`SELECT count(*) FROM cronfence_runs WHERE job = ? AND generation = ? AND finished_at IS NOT NULL`,
			started.JobID, started.Generation).Scan(&n); err != nil {
			tb.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the manual run of %q (generation %d) wrote no run row in 10s", started.JobID, started.Generation)
		}
		time.Sleep(time.Millisecond)
	}
}
