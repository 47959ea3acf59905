package adminapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/admin/internal/adminapi"
)

// hostileServer is a hostileBundle behind a real HTTP server.
type hostileServer struct {
	*hostileBundle
	srv *httptest.Server
	// brokenDB: a manual run's finish may fail, so send does not wait for
	// its run row.
	brokenDB bool
}

func newHostileServer(t *testing.T, opts *adminapi.Options) *hostileServer {
	t.Helper()
	b := hostileSetup(t, opts)
	srv := httptest.NewServer(b.handler)
	t.Cleanup(srv.Close)
	return &hostileServer{hostileBundle: b, srv: srv}
}

// send sends a request with the admin token and returns the status and
// body, checking every answer as hostileBundle.serve does.
func (s *hostileServer) send(t *testing.T, method, target, contentType string, body []byte) (int, []byte) {
	t.Helper()
	before := s.dump(t)
	req, err := http.NewRequest(method, s.srv.URL+target, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminSecret)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := s.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %.80s: %v", method, target, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	what := fmt.Sprintf("%s %.80q", method, target)
	if resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("%s: %d %s", what, resp.StatusCode, raw)
	}
	if resp.StatusCode >= 400 {
		checkErrorBody(t, what, resp.StatusCode, resp.Header, raw, method == http.MethodHead)
		if after := s.dump(t); after != before {
			t.Fatalf("%s was refused with %d but changed the database", what, resp.StatusCode)
		}
	}
	if resp.StatusCode == http.StatusAccepted && !s.brokenDB {
		s.waitRun(t, raw)
	}
	return resp.StatusCode, raw
}

// wantCode checks an error answer's status and code.
func wantCode(t *testing.T, what string, status int, body []byte, wantStatus int, wantCode string) {
	t.Helper()
	var e apiErr
	_ = json.Unmarshal(body, &e)
	if status != wantStatus || e.Code != wantCode {
		t.Errorf("%s: got %d %s, want %d %s", what, status, body, wantStatus, wantCode)
	}
}

// Bodies that are too big, malformed, followed by garbage, of another
// content type or with unknown fields are refused with a clear JSON error
// and change nothing.
func TestHostileBodies(t *testing.T) {
	t.Parallel()
	s := newHostileServer(t, nil)
	path := client.Prefix + "/nightly"
	const jsonType = "application/json"
	big := []byte(`{"enabled": false, "note": "` + strings.Repeat("x", adminapi.DefaultMaxBodyBytes) + `"}`)
	for _, tc := range []struct {
		name, contentType, body string
		status                  int
		code                    string
	}{
		{"oversized", jsonType, string(big), http.StatusRequestEntityTooLarge, "BODY_TOO_LARGE"},
		{"malformed", jsonType, `{"enabled": fals`, http.StatusBadRequest, "MALFORMED_BODY"},
		{"not an object", jsonType, `[false]`, http.StatusBadRequest, "MALFORMED_BODY"},
		{"trailing garbage", jsonType, `{"enabled": false} rm -rf /`, http.StatusBadRequest, "MALFORMED_BODY"},
		{"second object", jsonType, `{"enabled": false}{"enabled": true}`, http.StatusBadRequest, "MALFORMED_BODY"},
		{"unknown field", jsonType, `{"enabled": false, "owner": "me"}`, http.StatusBadRequest, "MALFORMED_BODY"},
		{"empty", jsonType, ``, http.StatusBadRequest, "MALFORMED_BODY"},
		{"enabled as string", jsonType, `{"enabled": "false"}`, http.StatusBadRequest, "MALFORMED_BODY"},
		{"note with NUL", jsonType, `{"enabled": false, "note": "a\u0000b"}`, http.StatusBadRequest, "INVALID_ARGUMENT"},
		{"note too long", jsonType, `{"enabled": false, "note": "` + strings.Repeat("n", 1001) + `"}`, http.StatusBadRequest, "INVALID_ARGUMENT"},
		{"text/plain", "text/plain", `{"enabled": false}`, http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE"},
		{"form", "application/x-www-form-urlencoded", `enabled=false`, http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE"},
		{"unparsable type", "application/json; =", `{"enabled": false}`, http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE"},
	} {
		status, body := s.send(t, http.MethodPut, path, tc.contentType, []byte(tc.body))
		wantCode(t, tc.name, status, body, tc.status, tc.code)
		var e apiErr
		if json.Unmarshal(body, &e) == nil && tc.code == "MALFORMED_BODY" && len(e.Message) < 20 {
			t.Errorf("%s: message %q does not say what is wrong", tc.name, e.Message)
		}
	}
	// The same body is accepted as JSON, with or without a charset, and
	// without a Content-Type at all.
	for _, ct := range []string{jsonType, "application/json; charset=utf-8", "Application/JSON", ""} {
		if status, body := s.send(t, http.MethodPut, path, ct, []byte(`{"enabled": false}`)); status != http.StatusOK {
			t.Errorf("Content-Type %q: %d %s", ct, status, body)
		}
	}
}

// Thousands of headers and very long paths are refused (431 by net/http,
// 404 by the API) and the server goes on serving.
func TestHostileHeadersAndPaths(t *testing.T) {
	t.Parallel()
	s := newHostileServer(t, nil)

	// Many headers, past net/http's 1 MB header limit: a raw request, since
	// the client would send them all the same.
	conn, err := net.Dial("tcp", s.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	var req bytes.Buffer
	fmt.Fprintf(&req, "GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n", client.Prefix, adminSecret)
	for i := range 40000 {
		fmt.Fprintf(&req, "X-Hostile-%d: %s\r\n", i, strings.Repeat("v", 20))
	}
	req.WriteString("\r\n")
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	go func() { _, _ = conn.Write(req.Bytes()) }() // the server may answer before reading it all
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("many headers: %v", err)
	}
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("many headers: %d, want 431", resp.StatusCode)
	}
	_ = conn.Close()

	// 5000 small headers stay under the limit: answered as usual.
	r, _ := http.NewRequest(http.MethodGet, s.srv.URL+client.Prefix, nil)
	r.Header.Set("Authorization", "Bearer "+adminSecret)
	for i := range 5000 {
		r.Header.Set(fmt.Sprintf("X-H-%d", i), "v")
	}
	if resp, err := s.srv.Client().Do(r); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("5000 headers: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// A 100 KB job segment: an unknown job; a 100 KB extra segment: no such path.
	long := strings.Repeat("a", 100<<10)
	status, body := s.send(t, http.MethodGet, client.Prefix+"/"+long, "", nil)
	wantCode(t, "100 KB job name", status, body, http.StatusNotFound, "CRON_JOB_NOT_FOUND")
	status, body = s.send(t, http.MethodGet, client.Prefix+"/nightly/"+long, "", nil)
	wantCode(t, "100 KB segment", status, body, http.StatusNotFound, "NOT_FOUND")
	status, body = s.send(t, http.MethodGet, client.Prefix+"/"+strings.Repeat("%2F", 30000)+"/logs", "", nil)
	wantCode(t, "90 KB of escaped slashes", status, body, http.StatusNotFound, "CRON_JOB_NOT_FOUND")
	status, body = s.send(t, http.MethodGet, client.Prefix+strings.Repeat("/x", 50000), "", nil)
	wantCode(t, "50000 segments", status, body, http.StatusNotFound, "NOT_FOUND")

	// Still serving.
	if status, body := s.send(t, http.MethodGet, client.Prefix+"/nightly", "", nil); status != http.StatusOK {
		t.Fatalf("after the hostile requests: %d %s", status, body)
	}
}

// Every job name the library accepts goes through each REST path escaped
// and comes back exactly; names it cannot hold are unknown jobs, with
// nothing written.
func TestHostileJobNamesREST(t *testing.T) {
	t.Parallel()
	s := newHostileServer(t, nil)
	for _, name := range hostileJobs {
		p := client.Prefix + "/" + url.PathEscape(name)
		var job client.Job
		status, body := s.send(t, http.MethodGet, p, "", nil)
		if status != http.StatusOK || json.Unmarshal(body, &job) != nil || job.Name != name {
			t.Errorf("GET %q: %d %s", name, status, body)
		}
		status, body = s.send(t, http.MethodPut, p, "application/json", []byte(`{"enabled": false, "note": `+jsonString(name)+`}`))
		if status != http.StatusOK || json.Unmarshal(body, &job) != nil || job.Name != name || job.Override == nil || job.Override.Note != name {
			t.Errorf("PUT %q: %d %s", name, status, body)
		}
		var started struct {
			JobID string `json:"jobId"`
		}
		status, body = s.send(t, http.MethodPost, p+"/run", "", nil)
		if status != http.StatusAccepted || json.Unmarshal(body, &started) != nil || started.JobID != name {
			t.Errorf("POST %q/run: %d %s", name, status, body)
		}
		var logs struct {
			JobID string       `json:"jobId"`
			Logs  []client.Run `json:"logs"`
		}
		status, body = s.send(t, http.MethodGet, p+"/logs?limit=5", "", nil)
		if status != http.StatusOK || json.Unmarshal(body, &logs) != nil || logs.JobID != name || len(logs.Logs) != 1 || logs.Logs[0].JobID != name {
			t.Errorf("GET %q/logs: %d %s", name, status, body)
		}
	}
	for _, name := range []string{"a\x00b", strings.Repeat("x", 10<<10), "\xff", "nightly\n", " nightly"} {
		p := client.Prefix + "/" + url.PathEscape(name)
		for _, call := range []struct{ method, suffix, body string }{
			{http.MethodGet, "", ""}, {http.MethodPut, "", `{"enabled": false}`}, {http.MethodPost, "/run", ""}, {http.MethodGet, "/logs", ""},
		} {
			status, body := s.send(t, call.method, p+call.suffix, "application/json", []byte(call.body))
			wantCode(t, fmt.Sprintf("%s %.40q%s", call.method, name, call.suffix), status, body, http.StatusNotFound, "CRON_JOB_NOT_FOUND")
		}
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// With any one table dropped from under a running server, every endpoint
// answers, none with a 5xx but 503, always as JSON errors; /readyz names
// the missing table. Without the pause overrides' table the replica is
// still ready: its jobs run on their declared values (a broken pause table
// fails open), and only what reads or writes an override answers 503.
func TestHostileBrokenStore(t *testing.T) {
	t.Parallel()
	for _, table := range jobTables {
		t.Run(table, func(t *testing.T) {
			t.Parallel()
			s := newHostileServer(t, nil)
			s.brokenDB = true
			if _, err := s.db.Exec(`DROP TABLE ` + table); err != nil {
				t.Fatal(err)
			}
			status, body := s.send(t, http.MethodGet, "/readyz", "", nil)
			switch {
			case table == "cronfence_job_state":
				if status != http.StatusOK {
					t.Errorf("/readyz without the pause table: %d %s, want 200 (the jobs run on their declared values)", status, body)
				}
			case status != http.StatusServiceUnavailable || !strings.Contains(string(body), table):
				t.Errorf("/readyz: %d %s, want 503 naming %s", status, body, table)
			}
			for _, call := range []struct{ method, path, body string }{
				{http.MethodGet, client.Prefix, ""},
				{http.MethodGet, client.Prefix + "/nightly", ""},
				{http.MethodPut, client.Prefix + "/nightly", `{"enabled": false}`},
				{http.MethodGet, client.Prefix + "/nightly/logs", ""},
				{http.MethodPost, client.Prefix + "/nightly/run", ""}, // last: its finish may write late
			} {
				// send checks: no 5xx but 503, JSON errors, nothing changed
				// by a refusal.
				s.send(t, call.method, call.path, "application/json", []byte(call.body))
			}
		})
	}
}
