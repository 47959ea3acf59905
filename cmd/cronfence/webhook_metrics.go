package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cronfence/cronfence/cmd/cronfence/internal/webhook"
)

// registerWebhookMetrics exports the counts of an alert webhook sender as
// cronfence_webhook_deliveries_total{result} (delivered, failed, dropped)
// and cronfence_webhook_retries_total, read at scrape time. The webhook is
// the binary's own (internal/webhook), so its metrics are registered here,
// beside the public metrics package's.
func registerWebhookMetrics(reg prometheus.Registerer, s *webhook.Sender) error {
	return reg.Register(&webhookStats{
		s: s,
		deliveries: prometheus.NewDesc("cronfence_webhook_deliveries_total",
			"Alert deliveries to the webhook from this replica, by result: delivered (2xx), failed (out of attempts or refused), "+
				"dropped (the queue was full).", []string{"result"}, nil),
		retries: prometheus.NewDesc("cronfence_webhook_retries_total",
			"Webhook delivery attempts after the first.", nil, nil),
	})
}

type webhookStats struct {
	s                   *webhook.Sender
	deliveries, retries *prometheus.Desc
}

func (w *webhookStats) Describe(ch chan<- *prometheus.Desc) {
	ch <- w.deliveries
	ch <- w.retries
}

func (w *webhookStats) Collect(ch chan<- prometheus.Metric) {
	st := w.s.Stats()
	ch <- prometheus.MustNewConstMetric(w.deliveries, prometheus.CounterValue, float64(st.Delivered), "delivered")
	ch <- prometheus.MustNewConstMetric(w.deliveries, prometheus.CounterValue, float64(st.Failed), "failed")
	ch <- prometheus.MustNewConstMetric(w.deliveries, prometheus.CounterValue, float64(st.Dropped), "dropped")
	ch <- prometheus.MustNewConstMetric(w.retries, prometheus.CounterValue, float64(st.Retried))
}
