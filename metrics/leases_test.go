package metrics_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/internal/scrape"
	"github.com/cronfence/cronfence/metrics"
	"github.com/cronfence/cronfence/store"
)

// The lease gauges are the store's view: a lease that another owner took,
// and stopped renewing as a SIGSTOPped holder would, shows on this
// replica's /metrics with its holder and generation, its age and time
// unrenewed rising with the store's clock; a renewal resets the one and
// not the other; expiry removes it. Of a job with overlap allow the oldest
// slot lease shows. Leases of jobs not registered here, and other leases,
// do not. Each scrape is one read of the store; a failed read shows no
// lease gauge and is counted.
func TestLeaseGaugesShowEveryHoldersLease(t *testing.T) {
	for _, o := range openers {
		t.Run(o.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			fake := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			reg := prometheus.NewRegistry()
			col, err := metrics.New(reg, &metrics.Options{Replica: "this-replica"})
			if err != nil {
				t.Fatal(err)
			}
			here, openOther := o.open(t, col, fake.Now) // this replica's store, instrumented as serve's
			other := openOther()                        // another replica's, on the same database
			jobs := []cronfence.JobInfo{
				{Job: cronfence.Job{Name: "stuck", Overlap: cronfence.OverlapSkip}},
				{Job: cronfence.Job{Name: "fanout", Overlap: cronfence.OverlapAllow}},
				{Job: cronfence.Job{Name: "idle", Overlap: cronfence.OverlapSkip}},
			}
			if err := metrics.RegisterLeases(reg, here, metrics.LeaseOptions{
				Jobs: func() []cronfence.JobInfo { return jobs }, Logger: quiet,
			}); err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(metrics.Handler(reg))
			defer srv.Close()
			scrapes := 0
			get := func() *scrape.Page {
				t.Helper()
				p, err := scrape.Get(srv.URL)
				if err != nil {
					t.Fatal(err)
				}
				scrapes++
				if problems, err := p.Lint(); err != nil || len(problems) > 0 {
					t.Fatalf("promlint: %v %v\n%s", problems, err, p.Text)
				}
				return p
			}
			acquire := func(name, owner string) store.Lease {
				t.Helper()
				l, ok, err := other.LeaseAcquire(ctx, store.LeaseAcquireParams{Name: name, Owner: owner, TTL: 90 * time.Second})
				if err != nil || !ok {
					t.Fatalf("acquire %s: %v, %v", name, ok, err)
				}
				return l
			}
			type gauges struct {
				present                bool
				age, unrenewed, genera float64
			}
			read := func(p *scrape.Page, job, holder string) gauges {
				var g gauges
				var ok [3]bool
				g.age, ok[0] = p.Value("cronfence_lease_age_seconds", "job", job, "holder", holder)
				g.unrenewed, ok[1] = p.Value("cronfence_lease_unrenewed_seconds", "job", job, "holder", holder)
				g.genera, ok[2] = p.Value("cronfence_lease_generation", "job", job, "holder", holder)
				if ok[0] != ok[1] || ok[1] != ok[2] {
					t.Fatalf("%s/%s: the three lease gauges present %v, want all or none\n%s", job, holder, ok, p.Text)
				}
				g.present = ok[0]
				return g
			}
			want := func(p *scrape.Page, job, holder string, w gauges) {
				t.Helper()
				if got := read(p, job, holder); got != w {
					t.Errorf("at %s, the lease of %s held by %s: %+v, want %+v\n%s", fake.Now().Format(time.TimeOnly), job, holder, got, w, p.Text)
				}
			}
			families := func(p *scrape.Page) int {
				return len(p.Families["cronfence_lease_age_seconds"].GetMetric())
			}

			if p := get(); families(p) != 0 {
				t.Fatalf("lease gauges with no lease held:\n%s", p.Text)
			}
			// Two earlier holdings of stuck's lease, released: the one held
			// now is generation 3.
			for range 2 {
				l := acquire("job:stuck", "earlier-owner")
				if _, err := other.LeaseRelease(ctx, l.Ref()); err != nil {
					t.Fatal(err)
				}
			}
			stuck := acquire("job:stuck", "stopped-owner") // 12:00:00
			fake.Advance(30 * time.Second)
			acquire("job:fanout@2026-03-01T12:00:30Z", "owner-b") // 12:00:30
			fake.Advance(10 * time.Second)
			acquire("job:fanout@2026-03-01T12:00:40Z", "owner-c") // 12:00:40, younger
			acquire("job:unregistered", "owner-b")
			acquire(cronfence.MonitorLeaseName, "owner-b")
			fake.Advance(20 * time.Second) // 12:01:00

			p := get()
			want(p, "stuck", "stopped-owner", gauges{true, 60, 60, 3})
			want(p, "fanout", "owner-b", gauges{true, 30, 30, 1})
			if n := families(p); n != 2 {
				t.Errorf("%d lease_age_seconds series, want stuck's and fanout's oldest only:\n%s", n, p.Text)
			}
			// Nobody renews: both keep rising.
			fake.Advance(20 * time.Second) // 12:01:20
			p = get()
			want(p, "stuck", "stopped-owner", gauges{true, 80, 80, 3})
			want(p, "fanout", "owner-b", gauges{true, 50, 50, 1})

			// A renewal resets the time unrenewed, not the age.
			if _, err := other.LeaseRenew(ctx, store.LeaseRenewParams{LeaseRef: stuck.Ref(), TTL: 90 * time.Second}); err != nil {
				t.Fatal(err)
			}
			fake.Advance(5 * time.Second) // 12:01:25
			p = get()
			want(p, "stuck", "stopped-owner", gauges{true, 85, 5, 3})

			// The slot lease of 12:00:30 expires at 12:02:00; the one of
			// 12:00:40 is then the oldest.
			fake.Advance(35 * time.Second) // 12:02:00
			p = get()
			want(p, "fanout", "owner-b", gauges{})
			want(p, "fanout", "owner-c", gauges{true, 80, 80, 1})
			// stuck's, renewed at 12:01:20, expires at 12:02:50.
			fake.Advance(50 * time.Second)
			p = get()
			if n := families(p); n != 0 {
				t.Errorf("%d lease_age_seconds series once every lease expired, want none:\n%s", n, p.Text)
			}
			if v, ok := p.Value("cronfence_lease_read_errors_total"); !ok || v != 0 {
				t.Errorf("lease_read_errors_total = %v (present %v), want 0", v, ok)
			}
			// One read per scrape, timed as op LeaseList.
			// (This scrape's own read may or may not be in the count yet.)
			if n, _ := p.Value("cronfence_store_round_trip_seconds", "op", "LeaseList"); int(n) != scrapes-1 && int(n) != scrapes {
				t.Errorf("store_round_trip_seconds{op=LeaseList} count %v after %d scrapes, want one per scrape", n, scrapes)
			}
			p.Promtool(t)

			// The store goes away: no lease gauge at all rather than stale
			// values, and the failure is counted.
			acquire("job:stuck", "stopped-owner")
			if p := get(); read(p, "stuck", "stopped-owner") == (gauges{}) {
				t.Fatalf("the new lease of stuck does not show:\n%s", p.Text)
			}
			if err := here.Close(); err != nil {
				t.Fatal(err)
			}
			p = get()
			if n := families(p); n != 0 {
				t.Errorf("%d lease_age_seconds series after a failed read, want none:\n%s", n, p.Text)
			}
			if _, ok := p.Families["cronfence_lease_generation"]; ok {
				t.Errorf("lease_generation shown after a failed read:\n%s", p.Text)
			}
			if v, _ := p.Value("cronfence_lease_read_errors_total"); v != 1 {
				t.Errorf("lease_read_errors_total = %v after one failed read, want 1", v)
			}
			p.Promtool(t)
		})
	}
}

// A read that outlasts the timeout is abandoned: the scrape answers
// without the lease gauges, and counts it.
func TestLeaseGaugesReadTimeout(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	slow := slowReader{release: make(chan struct{})}
	if err := metrics.RegisterLeases(reg, slow, metrics.LeaseOptions{
		Jobs: func() []cronfence.JobInfo { return nil }, Timeout: 50 * time.Millisecond, Logger: quiet,
	}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(metrics.Handler(reg))
	defer srv.Close()
	defer close(slow.release) // first: a read the timeout did not end returns
	start := time.Now()
	p, err := scrape.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the scrape took %s with a read timeout of 50ms", took)
	}
	if v, _ := p.Value("cronfence_lease_read_errors_total"); v != 1 {
		t.Errorf("lease_read_errors_total = %v, want 1\n%s", v, p.Text)
	}
}

// slowReader answers only when its context ends, or when released.
type slowReader struct{ release chan struct{} }

func (r slowReader) LeaseList(ctx context.Context, _ store.LeaseListParams) (store.LeaseListResult, error) {
	select {
	case <-ctx.Done():
	case <-r.release:
	}
	return store.LeaseListResult{}, errors.Join(errors.New("slow store"), ctx.Err())
}
