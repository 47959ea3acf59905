package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/cmd/cronfence/internal/webhook"
	"github.com/cronfence/cronfence/internal/scrape"
	"github.com/cronfence/cronfence/metrics"
	"github.com/cronfence/cronfence/store"
)

// The webhook's counts are on /metrics.
func TestWebhookStatsExported(t *testing.T) {
	t.Parallel()
	rc := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer rc.Close()
	s, err := webhook.New(webhook.Config{URL: rc.URL, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if err := registerWebhookMetrics(reg, s); err != nil {
		t.Fatal(err)
	}
	s.Observe(cronfence.AlertEvent{Alert: store.Alert{ID: 1, Kind: store.AlertOrphanJob, Subject: "gone"}, Raised: true})
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(metrics.Handler(reg))
	defer srv.Close()
	p, err := scrape.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for result, want := range map[string]float64{"delivered": 1, "failed": 0, "dropped": 0} {
		if got, ok := p.Value("cronfence_webhook_deliveries_total", "result", result); !ok || got != want {
			t.Errorf("webhook_deliveries_total{result=%s} = %v (present %v), want %v", result, got, ok, want)
		}
	}
	if problems, err := p.Lint(); err != nil || len(problems) > 0 {
		t.Fatalf("promlint: %v %v", problems, err)
	}
}
