package adminapi_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cronfence/cronfence/internal/adminapi"
)

// The client and the handler it speaks to agree: a read, a write, the
// API's errors as *adminapi.Error, and an answer that is not the API's.
func TestClientAgainstTheHandler(t *testing.T) {
	b := setup(t, nil)
	ctx := context.Background()
	c := adminapi.Client{Base: b.srv.URL + "/", Token: adminSecret}

	var job adminapi.Job
	if err := c.Do(ctx, http.MethodGet, adminapi.JobPath("quiet"), nil, &job); err != nil || job.Name != "quiet" {
		t.Fatalf("GET quiet: %+v, %v", job, err)
	}
	off := false
	if err := c.Do(ctx, http.MethodPut, adminapi.JobPath("quiet"), map[string]any{"enabled": &off, "note": "client"}, &job); err != nil ||
		job.Override == nil || job.Override.Enabled == nil || *job.Override.Enabled || job.Override.Note != "client" {
		t.Fatalf("PUT quiet: %+v, %v", job.Override, err)
	}

	var ae *adminapi.Error
	err := c.Do(ctx, http.MethodGet, adminapi.JobPath("no such job"), nil, nil)
	if !errors.As(err, &ae) || ae.Status != http.StatusNotFound || ae.Code != "CRON_JOB_NOT_FOUND" || ae.Message == "" {
		t.Fatalf("GET an unknown job: %v (%+v), want a 404 CRON_JOB_NOT_FOUND", err, ae)
	}
	bad := adminapi.Client{Base: b.srv.URL, Token: "wrong"}
	if err := bad.Do(ctx, http.MethodGet, adminapi.Prefix, nil, nil); !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized {
		t.Fatalf("a wrong token: %v, want 401", err)
	}

	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "upstream is down", http.StatusBadGateway)
	}))
	defer proxy.Close()
	p := adminapi.Client{Base: proxy.URL, Token: adminSecret}
	if err := p.Do(ctx, http.MethodGet, adminapi.Prefix, nil, nil); !errors.As(err, &ae) || ae.Code != "502" || ae.Message != "upstream is down" {
		t.Fatalf("a proxy's error page: %v (%+v)", err, ae)
	}
	if err := (&adminapi.Client{Base: "ftp://x", Token: "t"}).Do(ctx, http.MethodGet, "/", nil, nil); err == nil {
		t.Fatal("an ftp:// base was accepted")
	}
}
