package adminapi_test

// Fuzz targets for every payload of the admin API, driven through the real
// handler over a real scheduler and SQLite file. hostileBundle.serve checks
// each answer: no 5xx but 503, no panic, errors always
// {"code", "message", "details"}, a refused request changes nothing.
// `go test` runs them over their seeds; `make fuzz` fuzzes each.

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/admin/internal/adminapi"
)

// request builds a request for target (path and query, as sent on the
// wire), or nil when no client could send it (net/http refuses it first).
func request(method, target string, body []byte, header http.Header) *http.Request {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://cronfence.test"+target, rd)
	if err != nil || req.URL.Host != "cronfence.test" {
		return nil
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	return req
}

func FuzzPutBody(f *testing.F) {
	for _, s := range []struct{ body, contentType string }{
		{`{"enabled": false, "note": "maintenance"}`, "application/json"},
		{`{"enabled": true}`, "application/json; charset=utf-8"},
		{`{"enabled": null, "note": ""}`, ""},
		{`{"enabled": "false"}`, "application/json"},
		{`{"enabled": 0}`, "application/json"},
		{`{"enabled": false, "extra": 1}`, "application/json"},
		{`{"enabled": false}{"enabled": true}`, "application/json"},
		{`{"enabled": false} garbage`, "application/json"},
		{`{"enabled": false`, "application/json"},
		{`[]`, "application/json"},
		{`null`, "application/json"},
		{``, "application/json"},
		{`{"enabled": false, "note": "` + strings.Repeat("n", 1001) + `"}`, "application/json"},
		{`{"enabled": false, "note": "\u0000"}`, "application/json"},
		{"{\"enabled\": false, \"note\": \"\xff\"}", "application/json"},
		{`{"enabled": false, "Enabled": true}`, "application/json"},
		{`enabled=false`, "application/x-www-form-urlencoded"},
		{`{"enabled": false}`, "text/plain"},
		{`{"enabled": false}`, "application/json; charset="},
		{strings.Repeat(`{"a":`, 10000), "application/json"},
	} {
		f.Add([]byte(s.body), s.contentType, uint8(0))
	}
	b := hostileSetup(f, &adminapi.Options{MaxBodyBytes: 4 << 10})
	f.Fuzz(func(t *testing.T, body []byte, contentType string, job uint8) {
		name := hostileJobs[int(job)%len(hostileJobs)]
		h := http.Header{"Authorization": {"Bearer " + adminSecret}}
		if contentType != "" {
			h.Set("Content-Type", contentType)
		}
		req := request(http.MethodPut, client.Prefix+"/"+url.PathEscape(name), body, h)
		if req == nil {
			t.Skip()
		}
		rec := b.serve(t, req)
		if rec.Code == http.StatusOK && !strings.Contains(rec.Body.String(), `"override":{`) {
			t.Fatalf("PUT %q answered 200 without the override: %s", body, rec.Body)
		}
	})
}

func FuzzJobPath(f *testing.F) {
	for _, s := range []string{
		"nightly", "reports%2Fdaily", "reports/daily", "it's%20%22quoted%22", "%E2%8F%B0%20backup%20%F0%9F%9A%80",
		"a%252Fb", "..%2F..%2Fetc%2Fpasswd", "../../etc/passwd", "line1%0Aline2", "%00", "%", "%zz", "%2", "", "/",
		"%2e%2e", "nightly%00", "sp%20ace%3F%23%26%3D", strings.Repeat("x", 10<<10), strings.Repeat("%2F", 300),
		"alerts", "replicas", "nightly;x", "%EF%BF%BD", "%ff%fe",
	} {
		for _, suffix := range []string{"", "/run", "/logs", "/", "/run/x"} {
			f.Add(s, suffix, uint8(0))
		}
	}
	methods := []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodHead, http.MethodDelete, "PATCH", "BREW"}
	b := hostileSetup(f, nil)
	f.Fuzz(func(t *testing.T, segment, suffix string, method uint8) {
		m := methods[int(method)%len(methods)]
		var body []byte
		if m == http.MethodPut {
			body = []byte(`{"enabled": false, "note": "fuzz"}`)
		}
		req := request(m, client.Prefix+"/"+segment+suffix, body, http.Header{"Authorization": {"Bearer " + adminSecret}})
		if req == nil {
			t.Skip()
		}
		b.serve(t, req)
	})
}

func FuzzLogsLimit(f *testing.F) {
	for _, s := range []string{
		"1", "50", "1000", "1001", "0", "-1", "", "abc", "1e3", "0x10", "99999999999999999999999", " 5", "5 ", "+5",
		"%00", "1&limit=2", "١٢", "%31", "5%00",
	} {
		f.Add(s, uint8(0))
	}
	b := hostileSetup(f, nil)
	f.Fuzz(func(t *testing.T, limit string, job uint8) {
		name := hostileJobs[int(job)%len(hostileJobs)]
		req := request(http.MethodGet, client.Prefix+"/"+url.PathEscape(name)+"/logs?limit="+limit, nil,
			http.Header{"Authorization": {"Bearer " + readSecret}})
		if req == nil {
			t.Skip()
		}
		b.serve(t, req)
	})
}

func FuzzAuthorization(f *testing.F) {
	for _, s := range []string{
		"Bearer " + adminSecret, "bearer " + adminSecret, "Bearer  " + adminSecret + " ", "Bearer " + readSecret,
		"Bearer", "Bearer ", "Basic YWRtaW46cw==", "", "Bearer " + adminSecret + "\x00", "Bearer " + strings.Repeat("a", 10<<10),
		"Token " + adminSecret, "Bearer\t" + adminSecret, "Bearer " + adminSecret + ", Bearer x",
	} {
		f.Add(s, uint8(0))
	}
	b := hostileSetup(f, nil)
	f.Fuzz(func(t *testing.T, auth string, which uint8) {
		// A read and a write: an unauthorised write must change nothing.
		var req *http.Request
		h := http.Header{"Authorization": {auth}}
		switch which % 3 {
		case 0:
			req = request(http.MethodGet, client.Prefix, nil, h)
		case 1:
			h.Set("Content-Type", "application/json")
			req = request(http.MethodPut, client.Prefix+"/nightly", []byte(`{"enabled": false}`), h)
		default:
			req = request(http.MethodPost, client.Prefix+"/nightly/run", nil, h)
		}
		rec := b.serve(t, req)
		accepted := rec.Code < 400
		good := auth == "Bearer "+adminSecret || (which%3 == 0 && auth == "Bearer "+readSecret)
		if accepted && !strings.Contains(auth, adminSecret) && !strings.Contains(auth, readSecret) {
			t.Fatalf("Authorization %q was accepted (%d)", auth, rec.Code)
		}
		if good && !accepted {
			t.Fatalf("Authorization %q was refused: %d %s", auth, rec.Code, rec.Body)
		}
	})
}

// FuzzQuery sends an arbitrary query string to each GET endpoint that
// reads one (?limit= of logs and alerts, ?open= of alerts) and to those
// that read none.
func FuzzQuery(f *testing.F) {
	for _, s := range []string{
		"limit=5", "limit=0", "limit=-1", "limit=1001", "limit=abc", "limit=1&limit=2", "open=true", "open=false",
		"open=maybe", "open=", "open=true&limit=3", "limit=%00", "%zz", "a=%", ";limit=1", strings.Repeat("limit=1&", 2000),
	} {
		f.Add(s, uint8(0))
	}
	paths := []string{"/nightly/logs", "/alerts", "/replicas", "", "/nightly"}
	b := hostileSetup(f, nil)
	f.Fuzz(func(t *testing.T, query string, which uint8) {
		req := request(http.MethodGet, client.Prefix+paths[int(which)%len(paths)]+"?"+query, nil,
			http.Header{"Authorization": {"Bearer " + readSecret}})
		if req == nil {
			t.Skip()
		}
		b.serve(t, req)
	})
}
