// Package metrics turns what a cronfence scheduler observes into Prometheus
// metrics. A Collector is a cronfence.Observer (set it as
// Config.Observer) registered on a registry the caller passes: nothing is
// registered globally, nothing at init.
//
// Every metric of a Collector is what this replica saw or did; aggregate
// across replicas in PromQL (sum by (job) for counters, max by (job) for
// the last completed slot). The lease gauges (RegisterLeases) are the
// database's view instead, the same on every replica. docs/metrics.md
// lists them all.
package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cronfence/cronfence"
)

// namespace prefixes every metric: cronfence_….
const namespace = "cronfence"

// Buckets of the histograms, in seconds. Fire latency is small when all is
// well (a claim round trip) and grows to minutes for catch-up and resumed
// runs; run durations span sub-second scripts to hour-long batches.
var (
	latencyBuckets   = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}
	durationBuckets  = []float64{.01, .1, .5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600, 7200}
	roundTripBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5}
)

// Options configure a Collector. The zero value is valid.
type Options struct {
	// Replica is this replica's owner id (cronfence.Config.Owner), the
	// replica label of skips_total. Defaults to cronfence.OwnerID().
	Replica string
}

// Collector is a cronfence.Observer that keeps the metrics.
type Collector struct {
	replica string

	runs          *prometheus.CounterVec
	skips         *prometheus.CounterVec
	claims        *prometheus.CounterVec
	fireLatency   *prometheus.HistogramVec
	runDuration   *prometheus.HistogramVec
	leasesLost    *prometheus.CounterVec
	fenceRefusals *prometheus.CounterVec
	catchUpRuns   *prometheus.CounterVec
	retries       *prometheus.CounterVec
	lastCompleted *prometheus.GaugeVec
	roundTrip     *prometheus.HistogramVec
	clockOffset   prometheus.Gauge
	alertsRaised  *prometheus.CounterVec
	alertsCleared *prometheus.CounterVec

	mu       sync.Mutex
	lastSlot map[string]time.Time // per job, the newest slot completed here
}

var _ cronfence.Observer = (*Collector)(nil)

// New builds a Collector and registers its metrics on reg.
func New(reg prometheus.Registerer, opts *Options) (*Collector, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Replica == "" {
		o.Replica = cronfence.OwnerID()
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: buckets}, labels)
	}
	c := &Collector{
		replica: o.Replica,
		runs:    counter("runs_total", "Runs that ended on this replica, by job and outcome (success, failure, interrupted).", "job", "outcome"),
		skips: counter("skips_total", "Slots and manual runs this replica recorded as skipped because another run held the job's lease, "+
			"by job, reason and recording replica.", "job", "reason", "replica"),
		claims: counter("claims_total", "Slot claims this replica sent, by job and result: won, or the store's refusal "+
			"(completed, already_executing, attempts_exhausted, failed, not_due, paused, skipped, lease_busy).", "job", "result"),
		fireLatency: histogram("fire_latency_seconds", "Time from a slot's instant to its handler's start on this replica, "+
			"for every scheduled (not manual) run, catch-up and resumed runs included, retries of failed attempts not "+
			"(they wait for their backoff on purpose).", latencyBuckets, "job"),
		runDuration: histogram("run_duration_seconds", "Handler run time on this replica, every outcome.", durationBuckets, "job"),
		leasesLost: counter("leases_lost_total", "Runs on this replica whose lease a renewal found gone (taken over or expired); "+
			"their context was cancelled.", "job"),
		fenceRefusals: counter("fence_refusals_total", "Run.Fence calls on this replica refused because the run's lease was lost.", "job"),
		catchUpRuns:   counter("catch_up_runs_total", "Missed slots this replica ran by catch-up.", "job"),
		retries:       counter("retries_total", "Retries of failed attempts this replica started (attempt 2 and later of a slot whose attempt failed).", "job"),
		lastCompleted: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "last_completed_slot_timestamp_seconds",
			Help: "Unix time of the newest slot this replica completed successfully; max by (job) across replicas."}, []string{"job"}),
		roundTrip: histogram("store_round_trip_seconds", "Database round trips, by store operation: each query on PostgreSQL, "+
			"each call on SQLite.", roundTripBuckets, "op"),
		clockOffset: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "clock_offset_seconds",
			Help: "This replica's clock minus the database clock, as last measured (positive: ahead)."}),
		alertsRaised:  counter("alerts_raised_total", "Alerts this replica's absence checks raised, by kind.", "kind"),
		alertsCleared: counter("alerts_resolved_total", "Alerts this replica's absence checks resolved, by kind.", "kind"),
		lastSlot:      map[string]time.Time{},
	}
	for _, m := range []prometheus.Collector{
		c.runs, c.skips, c.claims, c.fireLatency, c.runDuration, c.leasesLost, c.fenceRefusals, c.catchUpRuns, c.retries,
		c.lastCompleted, c.roundTrip, c.clockOffset, c.alertsRaised, c.alertsCleared,
	} {
		if err := reg.Register(m); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Observe records one event. It never blocks on anything but the
// metrics' own short locks.
func (c *Collector) Observe(e cronfence.Event) {
	switch e := e.(type) {
	case cronfence.ClaimEvent:
		result := "won"
		if !e.Won {
			result = string(e.Refusal)
			if result == "" {
				result = "refused"
			}
		}
		c.claims.WithLabelValues(e.Job, result).Inc()
	case cronfence.SkipEvent:
		c.skips.WithLabelValues(e.Job, e.Reason, c.replica).Inc()
	case cronfence.RunStartEvent:
		switch e.Origin {
		case cronfence.OriginManual:
		case cronfence.OriginRetry:
			c.retries.WithLabelValues(e.Job).Inc()
		default:
			c.fireLatency.WithLabelValues(e.Job).Observe(max(e.Latency, 0).Seconds())
		}
		if e.Origin == cronfence.OriginCatchUp {
			c.catchUpRuns.WithLabelValues(e.Job).Inc()
		}
	case cronfence.RunEndEvent:
		c.runs.WithLabelValues(e.Job, string(e.Outcome)).Inc()
		c.runDuration.WithLabelValues(e.Job).Observe(max(e.Duration, 0).Seconds())
		if e.Outcome == cronfence.RunSucceeded && e.Recorded && !e.Slot.IsZero() {
			c.completed(e.Job, e.Slot)
		}
	case cronfence.LeaseLostEvent:
		c.leasesLost.WithLabelValues(e.Job).Inc()
	case cronfence.FenceRefusedEvent:
		c.fenceRefusals.WithLabelValues(e.Job).Inc()
	case cronfence.ClockOffsetEvent:
		c.clockOffset.Set(e.Offset.Seconds())
	case cronfence.AlertEvent:
		switch {
		case e.Raised && !e.EndedAck.IsZero():
			// Raised again (changed since acknowledged): raised once already.
		case e.Raised:
			c.alertsRaised.WithLabelValues(string(e.Alert.Kind)).Inc()
		default:
			c.alertsCleared.WithLabelValues(string(e.Alert.Kind)).Inc()
		}
	}
}

// completed moves the job's last completed slot forward, never back: runs
// of one job may end out of order (overlap allow, a resumed slot).
func (c *Collector) completed(job string, slot time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slot.After(c.lastSlot[job]) {
		return
	}
	c.lastSlot[job] = slot
	c.lastCompleted.WithLabelValues(job).Set(float64(slot.UnixNano()) / 1e9)
}

// ObserveRoundTrip records one store round trip of operation op.
func (c *Collector) ObserveRoundTrip(op string, d time.Duration) {
	c.roundTrip.WithLabelValues(op).Observe(d.Seconds())
}
