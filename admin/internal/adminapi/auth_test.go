package adminapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// Basic credentials are never accepted by the API, for reads or writes: a
// browser attaches them by itself once the dashboard's pages asked for
// them, so a cross-site form post would carry them too.
func TestBasicAuthIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for _, c := range []struct{ method, path, body string }{
		{"PUT", "/api/admin/cron/slow", `{"enabled":false}`},
		{"POST", "/api/admin/cron/slow/run", ""},
		{"GET", "/api/admin/cron", ""},
	} {
		req, err := http.NewRequest(c.method, b.srv.URL+c.path, strings.NewReader(c.body))
		must(t, err)
		req.SetBasicAuth("ops", adminSecret)
		resp, err := b.srv.Client().Do(req)
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s %s with Basic auth: %d, want 401", c.method, c.path, resp.StatusCode)
		}
	}
	var j jobJSON
	b.do(t, "GET", "/api/admin/cron/slow", readSecret, "", &j)
	if !j.Enabled || j.Override != nil {
		t.Fatalf("a Basic-auth PUT changed the job: %+v", j)
	}
}
