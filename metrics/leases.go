package metrics

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/store"
)

// DefaultLeaseReadTimeout bounds the one lease read of a scrape.
const DefaultLeaseReadTimeout = 2 * time.Second

// jobLeasePrefix begins the name of every job lease: "job:NAME", or
// "job:NAME@SLOT" for a job whose overlap is allow.
const jobLeasePrefix = "job:"

// LeaseReader reads the leases held now, as the database sees them:
// store.Monitor's LeaseList.
type LeaseReader interface {
	LeaseList(ctx context.Context, p store.LeaseListParams) (store.LeaseListResult, error)
}

// LeaseOptions configure RegisterLeases.
type LeaseOptions struct {
	// Jobs returns the jobs whose leases are reported, read at each scrape
	// (the scheduler's Jobs). Required.
	Jobs func() []cronfence.JobInfo
	// Timeout bounds the read. Defaults to DefaultLeaseReadTimeout.
	Timeout time.Duration
	// Logger gets a warning for each read that failed. Defaults to
	// slog.Default().
	Logger *slog.Logger
}

// RegisterLeases exports, at each scrape, the leases of opts.Jobs' jobs
// held now by whichever replica holds them, from one read of st (the
// store's view, judged by the database clock):
// cronfence_lease_age_seconds, cronfence_lease_unrenewed_seconds and
// cronfence_lease_generation, labelled with the job and the holder's owner
// id. Every replica reports every holder, so a holder that is stopped or
// hung, and answers no scrape itself, shows on the others with its age and
// time unrenewed growing. A read that fails or outlasts the timeout leaves
// the three out of that scrape (nothing stale is shown), is logged, and is
// counted in cronfence_lease_read_errors_total.
func RegisterLeases(reg prometheus.Registerer, st LeaseReader, opts LeaseOptions) error {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultLeaseReadTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	labels := []string{"job", "holder"}
	return reg.Register(&leaseView{
		st: st, opts: opts,
		age: prometheus.NewDesc(namespace+"_lease_age_seconds",
			"Age of the lease held now on each job, by the database clock: since its holder acquired it. "+
				"The oldest one for a job with overlap allow. Absent while none is held.", labels, nil),
		unrenewed: prometheus.NewDesc(namespace+"_lease_unrenewed_seconds",
			"Time since the holder last renewed the job's lease, by the database clock. Renewals come every third "+
				"of the lease TTL: more means a holder that stopped (paused, hung, partitioned).", labels, nil),
		generation: prometheus.NewDesc(namespace+"_lease_generation",
			"Generation (fencing token) of the lease held now on each job.", labels, nil),
		errors: prometheus.NewDesc(namespace+"_lease_read_errors_total",
			"Scrapes whose read of the held leases failed or timed out, leaving the lease gauges out.", nil, nil),
	})
}

type leaseView struct {
	st   LeaseReader
	opts LeaseOptions

	age, unrenewed, generation, errors *prometheus.Desc
	failed                             atomic.Int64
}

func (v *leaseView) Describe(ch chan<- *prometheus.Desc) {
	ch <- v.age
	ch <- v.unrenewed
	ch <- v.generation
	ch <- v.errors
}

func (v *leaseView) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), v.opts.Timeout)
	defer cancel()
	res, err := v.st.LeaseList(ctx, store.LeaseListParams{Prefix: jobLeasePrefix, Limit: store.MaxRunListLimit})
	if err != nil {
		n := v.failed.Add(1)
		v.opts.Logger.Warn("cronfence: metrics: could not read the held leases; the lease gauges are left out of this scrape",
			"error", err, "timeout", v.opts.Timeout)
		ch <- prometheus.MustNewConstMetric(v.errors, prometheus.CounterValue, float64(n))
		return
	}
	ch <- prometheus.MustNewConstMetric(v.errors, prometheus.CounterValue, float64(v.failed.Load()))
	for job, l := range oldestByJob(res.Leases, v.opts.Jobs()) {
		ch <- prometheus.MustNewConstMetric(v.age, prometheus.GaugeValue, max(res.Now.Sub(l.AcquiredAt), 0).Seconds(), job, l.Owner)
		ch <- prometheus.MustNewConstMetric(v.unrenewed, prometheus.GaugeValue, max(res.Now.Sub(l.RenewedAt), 0).Seconds(), job, l.Owner)
		ch <- prometheus.MustNewConstMetric(v.generation, prometheus.GaugeValue, float64(l.Generation), job, l.Owner)
	}
}

// oldestByJob maps the held leases to the jobs they guard, keeping the
// oldest of each job: "job:NAME" is NAME's, and "job:NAME@…" is NAME's
// when NAME's overlap is allow (one lease per slot) and no job is called
// "NAME@…" itself. Leases of jobs not in jobs are left out.
func oldestByJob(leases []store.Lease, jobs []cronfence.JobInfo) map[string]store.Lease {
	exact := make(map[string]string, len(jobs))
	var perSlot []string // "job:NAME@" of the jobs with overlap allow
	for _, info := range jobs {
		j := info.Job
		exact[jobLeasePrefix+j.Name] = j.Name
		if j.Overlap == cronfence.OverlapAllow {
			perSlot = append(perSlot, j.Name)
		}
	}
	// The longest name first: "a@b" before "a" for "job:a@b@…".
	sort.Slice(perSlot, func(a, b int) bool { return len(perSlot[a]) > len(perSlot[b]) })
	out := map[string]store.Lease{}
	for _, l := range leases {
		job, ok := exact[l.Name]
		if !ok {
			for _, name := range perSlot {
				if strings.HasPrefix(l.Name, jobLeasePrefix+name+"@") {
					job, ok = name, true
					break
				}
			}
		}
		if !ok {
			continue
		}
		if cur, seen := out[job]; !seen || l.AcquiredAt.Before(cur.AcquiredAt) {
			out[job] = l
		}
	}
	return out
}
