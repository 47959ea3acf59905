package main

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/cmd/cronfence/internal/config"
	"github.com/cronfence/cronfence/cmd/cronfence/internal/webhook"
	"github.com/cronfence/cronfence/metrics"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
)

// webhookCloseTimeout bounds delivering the alerts still queued at
// shutdown.
const webhookCloseTimeout = 5 * time.Second

// observability is what `serve` tells the outside: Prometheus metrics on
// its own registry, and alerts POSTed to the config's webhook.
type observability struct {
	reg     *prometheus.Registry
	metrics *metrics.Collector
	webhook *webhook.Sender // nil without webhook:
}

// newObservability builds the registry, the scheduler's metrics and, when
// the config has a webhook: section, the alert sender.
func newObservability(f *config.File, logger *slog.Logger) (*observability, error) {
	reg := prometheus.NewRegistry()
	// The process's own health (memory, goroutines, file descriptors) next
	// to the scheduler's: what an operator checks first when runs go late.
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, err
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, err
	}
	col, err := metrics.New(reg, nil)
	if err != nil {
		return nil, err
	}
	o := &observability{reg: reg, metrics: col}
	if w := f.Webhook; w != nil {
		s, err := webhook.New(webhook.Config{
			URL: w.URL, Timeout: w.Timeout, Retries: w.Retries, Headers: w.Headers, QueueSize: w.QueueSize, Logger: logger,
		})
		if err != nil {
			return nil, usageError("%s:%d: webhook: %w", f.Path, w.Line, err)
		}
		o.webhook = s
		if err := registerWebhookMetrics(reg, s); err != nil {
			_ = s.Close(context.Background())
			return nil, err
		}
	}
	return o, nil
}

// tracer times each PostgreSQL query for store_round_trip_seconds; it goes
// on the pool's config before the pool is built.
func (o *observability) tracer() pgx.QueryTracer { return o.metrics.QueryTracer() }

// instrument names each store call for the metrics; on SQLite, where
// there is no driver tracer, it also times the call.
func (o *observability) instrument(s store.Store) store.Store {
	_, isPostgres := s.(*postgres.Store)
	return o.metrics.InstrumentStore(s, !isPostgres)
}

// watchLeases exports the leases of s's jobs as the store sees them, read
// once per scrape through s's (instrumented) store, so this replica's
// /metrics shows every holder's lease, a stopped one's included.
func (o *observability) watchLeases(s *cronfence.Scheduler, logger *slog.Logger) error {
	return metrics.RegisterLeases(o.reg, s.Store(), metrics.LeaseOptions{Jobs: s.Jobs, Logger: logger})
}

// observer is what the scheduler tells: every event to the metrics, alerts
// to the webhook too.
func (o *observability) observer() cronfence.Observer {
	if o.webhook == nil {
		return o.metrics
	}
	return fanOut{o.metrics, o.webhook}
}

// mount serves GET /metrics beside next. It needs no token, as Prometheus
// scrapes expect: bind --listen where only trusted networks reach it. The
// metrics name jobs and replicas, never tokens, commands or run output.
func (o *observability) mount(next http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics.Handler(o.reg))
	mux.Handle("/", next)
	return mux
}

// close delivers the alerts still queued to the webhook, for a while.
func (o *observability) close(logger *slog.Logger) {
	if o.webhook == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), webhookCloseTimeout)
	defer cancel()
	if err := o.webhook.Close(ctx); err != nil {
		logger.Warn("cronfence: alerts still queued for the webhook at shutdown were not delivered", "waited", webhookCloseTimeout)
	}
}

// fanOut tells every observer, in order.
type fanOut []cronfence.Observer

func (f fanOut) Observe(e cronfence.Event) {
	for _, o := range f {
		o.Observe(e)
	}
}
