package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// holds is the lease_age_seconds collector: the runs in progress on this
// replica that hold a lease, measured at scrape time, so an owner stuck
// for days shows its age growing instead of a value frozen at its last
// event.
type holds struct {
	desc *prometheus.Desc
	now  func() time.Time

	mu   sync.Mutex
	runs map[holdKey]hold
}

// holdKey names one holding: lease names are unique per run in progress
// (one per job, or one per slot with overlap allow), generations per name.
type holdKey struct {
	lease      string
	generation int64
}

type hold struct {
	job   string
	since time.Time
}

func newHolds(now func() time.Time) *holds {
	return &holds{
		desc: prometheus.NewDesc(namespace+"_lease_age_seconds",
			"Age of the oldest lease this replica holds for a run in progress, by job; absent while none runs here.",
			[]string{"job"}, nil),
		now:  now,
		runs: map[holdKey]hold{},
	}
}

func (h *holds) start(job, lease string, generation int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.runs[holdKey{lease, generation}] = hold{job: job, since: h.now()}
}

func (h *holds) end(lease string, generation int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.runs, holdKey{lease, generation})
}

func (h *holds) Describe(ch chan<- *prometheus.Desc) { ch <- h.desc }

func (h *holds) Collect(ch chan<- prometheus.Metric) {
	now := h.now()
	h.mu.Lock()
	oldest := map[string]time.Time{}
	for _, r := range h.runs {
		if t, ok := oldest[r.job]; !ok || r.since.Before(t) {
			oldest[r.job] = r.since
		}
	}
	h.mu.Unlock()
	for job, since := range oldest {
		ch <- prometheus.MustNewConstMetric(h.desc, prometheus.GaugeValue, max(now.Sub(since), 0).Seconds(), job)
	}
}
