// Package monitor runs the absence checks (package absence) on one replica
// at a time and reconciles their verdicts with the alerts kept in the store:
// every CheckEvery, the holder of the lease LeaseName gathers a snapshot of
// the replica registry and of each registered job's lease, latest claim and
// recent runs, evaluates the checks on it, and raises and resolves alerts
// through an Alerter. docs/alerts.md describes the checks.
package monitor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cronfence/cronfence/internal/absence"
	"github.com/cronfence/cronfence/internal/service"
	"github.com/cronfence/cronfence/store"
)

// LeaseName is the lease held by the replica that runs the absence
// checks. Its holder keeps it from pass to pass (renewing it each pass,
// with a TTL of two passes), so the checks run once per CheckEvery across
// the cluster, and another replica takes over within two passes of the
// holder's death. Readers judge whether the checks run by its renewals.
const LeaseName = "cronfence:monitor"

// Bounds of what one pass reads. Run rows carry their logs (up to
// store.MaxRunLogBytes each), so these stay small.
const (
	// monitorRecentRuns is how many of the newest run rows of all jobs the
	// orphan check reads.
	monitorRecentRuns = 500
	// monitorJobRuns is how many run rows per job are read at least: enough
	// for the skip streak (the threshold + 1) and a view of recent
	// durations.
	monitorJobRuns = 10
	// monitorFailingRows bounds the rows per job read for the failing
	// check: enough for 3 slots of 49 attempts each.
	monitorFailingRows = 200
)

// errNotRegistered: this replica is not live in the replica registry yet
// (no heartbeat recorded), so the registry it reads may be incomplete and
// its verdicts on drift and orphans unsafe.
var errNotRegistered = errors.New("this replica is not in the replica registry yet")

// Monitor runs the checks, one pass at a time, each on a goroutine of its
// own so that a slow pass never delays a fire. Set its exported fields
// before its first Tick.
type Monitor struct {
	*service.Base
	Alerts *Alerter
	// Chosen reports whether this replica is the one to check
	// (peers.RunsChecks).
	Chosen     func() bool
	InRegistry bool // this replica keeps a registry row; without one it runs no checks
	CheckEvery time.Duration
	Thresholds absence.Thresholds
	// StoredKinds, when set, returns the handler kinds the enabled stored
	// schedules name, with a few of the schedules naming each; false while
	// they are not read.
	StoredKinds func() (map[string][]string, bool)

	mu      sync.Mutex
	next    time.Time // next pass, on this replica's clock
	running bool      // a pass is in progress
	passes  sync.WaitGroup
	// Only the pass in progress, and stop after the last, touch what
	// follows.
	lease  store.Lease // LeaseName while this replica holds it
	scheds absence.Schedules
	jobs   map[string]knownJobs // each replica's jobs as the last snapshot had them, by owner
}

// knownJobs are a replica's jobs and their digest (store.Replica.JobsHash),
// kept between passes so that a store that digests them sends them only
// when they change.
type knownJobs struct {
	hash string
	jobs []store.ReplicaJob
}

// Tick starts a pass when one is due. A replica without a registry row of
// its own runs none: every pass would wait for it (errNotRegistered).
func (m *Monitor) Tick(ctx context.Context, now time.Time) {
	if !m.InRegistry || m.CheckEvery < 0 {
		return
	}
	m.mu.Lock()
	// A next pass further away than CheckEvery means this clock went back:
	// the pass is due now rather than after the jump.
	if m.running || (now.Before(m.next) && m.next.Sub(now) <= m.CheckEvery) {
		m.mu.Unlock()
		return
	}
	m.next, m.running = now.Add(m.CheckEvery), true
	m.passes.Add(1)
	m.mu.Unlock()
	m.Go(func() {
		defer m.passes.Done()
		defer func() { m.mu.Lock(); m.running = false; m.mu.Unlock() }()
		// One bound for the whole pass: a few reads and the alerts' writes.
		ctx, cancel := m.Bounded(ctx)
		defer cancel()
		m.Pass(ctx)
	})
}

// Pass is one pass: lease, snapshot, evaluation, reconciliation. Tick runs
// it on a goroutine of its own; a caller of its own must not run two at
// once. A
// snapshot that could not be read whole changes nothing: no evidence is
// not evidence of health.
func (m *Monitor) Pass(ctx context.Context) {
	if !m.Chosen() {
		m.releaseLease(ctx) // when held: hand it to the one that checks
		return
	}
	now, ok := m.leaseHeld(ctx)
	if !ok {
		return
	}
	th := m.Thresholds
	snap, open, err := m.snapshot(ctx, now, th)
	if errors.Is(err, errNotRegistered) {
		// Hand the checks to a replica that is registered.
		m.Log.Debug("cronfence: absence checks wait for this replica's heartbeat")
		m.releaseLease(ctx)
		return
	}
	const failed = "cronfence: absence checks skipped: could not read their snapshot"
	if err != nil {
		if ctx.Err() == nil {
			m.WarnRepeated(failed, "error", err)
		}
		return
	}
	m.Failures.Over(failed)
	m.Alerts.Reconcile(ctx, now, absence.Evaluate(snap, th), open)
}

// leaseHeld renews LeaseName, or takes it when free, and returns
// the database clock as the lease saw it; false when another replica
// holds it or the store cannot be reached.
func (m *Monitor) leaseHeld(ctx context.Context) (time.Time, bool) {
	ttl := 2 * m.CheckEvery
	if m.lease.Generation != 0 {
		const failed = "cronfence: could not renew the monitor lease"
		l, err := m.Store.LeaseRenew(ctx, store.LeaseRenewParams{LeaseRef: m.lease.Ref(), TTL: ttl})
		if err == nil {
			m.Failures.Over(failed)
			m.lease = l
			return l.RenewedAt, true
		}
		if !errors.Is(err, store.ErrLeaseLost) {
			if ctx.Err() == nil {
				m.WarnRepeated(failed, "error", err)
			}
			return time.Time{}, false
		}
		m.Log.Info("cronfence: lost the monitor lease; another replica runs the absence checks", "generation", m.lease.Generation)
		m.lease = store.Lease{}
	}
	l, ok := m.TakeLease(ctx, LeaseName, ttl)
	if !ok {
		return time.Time{}, false
	}
	m.lease = l
	m.Log.Info("cronfence: this replica runs the absence checks", "generation", l.Generation, "every", m.CheckEvery)
	return l.AcquiredAt, true
}

// Stop waits for a pass in progress and gives LeaseName up, so
// another replica takes the checks over at its next pass rather than after
// the lease's TTL. Called once the loop ended: no pass starts after.
func (m *Monitor) Stop() {
	m.passes.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), service.StopTimeout)
	defer cancel()
	m.releaseLease(ctx)
}

// releaseLease gives LeaseName up, when held.
func (m *Monitor) releaseLease(ctx context.Context) {
	if m.lease.Generation == 0 {
		return
	}
	if _, err := m.Store.LeaseRelease(context.WithoutCancel(ctx), m.lease.Ref()); err != nil {
		m.Log.Warn("cronfence: could not release the monitor lease; it expires at its TTL", "error", err)
	}
	m.lease = store.Lease{}
}

// snapshot reads what the checks judge, and the open alerts. Round
// trips: 1 for the replicas, job states, recent runs, open alerts and held
// job leases (Store.MonitorSnapshot), 1 per 1,000 jobs the live replicas
// register (their runs, RunListPerJob), 1 per job with a deadline (the
// claim of its deadline slot), and, past the lease answer's limit, the
// leases it did not hold one by one (see jobLeases).
func (m *Monitor) snapshot(ctx context.Context, now time.Time, th absence.Thresholds) (absence.Snapshot, []store.Alert, error) {
	var snap absence.Snapshot
	all, err := m.Store.MonitorSnapshot(ctx, store.MonitorSnapshotParams{
		RecentRuns: monitorRecentRuns, OpenAlerts: store.MaxRunListLimit,
		Leases:    store.LeaseListParams{Prefix: "job:", Limit: store.MaxRunListLimit},
		KnownJobs: m.knownHashes(),
	})
	if err != nil {
		return snap, nil, err
	}
	if err := m.fillJobs(all.Replicas); err != nil {
		return snap, nil, err
	}
	reg := absence.NewRegistry(all.Replicas, now, th.ReplicaStale, &m.scheds)
	if !reg.IsLive(m.Owner) {
		return snap, nil, errNotRegistered
	}
	snap.Registry, snap.States, snap.Recent = reg, all.JobStates, all.RecentRuns
	if m.StoredKinds != nil {
		if used, ok := m.StoredKinds(); ok {
			snap.StoredKinds = used
			if used == nil {
				snap.StoredKinds = map[string][]string{}
			}
		}
	}
	snap.Jobs = make(map[string]absence.JobData, len(reg.Jobs))
	names := reg.Names()
	// Every job's newest runs, as many as every check but failing needs;
	// then more of those whose rows read hold no success, for failing:
	// a success ends what that check reads, so a job that succeeded
	// lately needs no more rows (with 10,000 jobs, the rows failing
	// would need of every job were most of a pass's work).
	perJob := min(max(th.SkipStreak+1, monitorJobRuns), store.MaxRunListLimit)
	runs, err := m.runsPerJob(ctx, names, perJob)
	if err != nil {
		return snap, nil, err
	}
	if more := min(failingRows(reg, th.Failing), store.MaxRunListLimit); more > perJob {
		var again []int // indexes into names
		var againNames []string
		for i, name := range names {
			if len(runs[i]) == perJob && !anySuccess(runs[i]) {
				again, againNames = append(again, i), append(againNames, name)
			}
		}
		longer, err := m.runsPerJob(ctx, againNames, more)
		if err != nil {
			return snap, nil, err
		}
		for k, i := range again {
			runs[i] = longer[k]
		}
	}
	for i, name := range names {
		j := reg.Jobs[name]
		d := absence.JobData{Runs: runs[i]}
		if slot := j.DeadlineSlot(now); !slot.IsZero() {
			if d.DeadlineSlot, err = m.Store.SlotGet(ctx, name, slot); err != nil && !errors.Is(err, store.ErrNotFound) {
				return snap, nil, err
			}
		}
		snap.Jobs[name] = d
	}
	if err := m.jobLeases(ctx, &snap, all.Leases); err != nil {
		return snap, nil, err
	}
	return snap, all.OpenAlerts, nil
}

// runsPerJob reads the newest limit runs of each job named, in statements
// of store.MaxRunListJobs jobs.
func (m *Monitor) runsPerJob(ctx context.Context, names []string, limit int) ([][]store.Run, error) {
	runs := make([][]store.Run, 0, len(names))
	for chunk := range slices.Chunk(names, store.MaxRunListJobs) {
		got, err := m.Store.RunListPerJob(ctx, store.RunListPerJobParams{Jobs: chunk, Limit: limit})
		if err != nil {
			return nil, err
		}
		runs = append(runs, got...)
	}
	return runs, nil
}

// anySuccess reports whether runs hold a scheduled run that succeeded:
// the failing check stops reading there (absence.checkFailing).
func anySuccess(runs []store.Run) bool {
	for _, r := range runs {
		if r.Success && !r.Manual && !r.Skipped && !r.Slot.IsZero() {
			return true
		}
	}
	return false
}

// failingRows is how many run rows per job the failing check needs to
// see limit slots that ended failed: each may have had as many attempts
// as the job's MaxAttempts, and the newest slot's may still be under way.
// At most monitorFailingRows: a streak that takes more rows to see is
// not reported (docs/alerts.md).
func failingRows(reg *absence.Registry, limit int) int {
	if limit <= 0 {
		return 0
	}
	attempts := 1
	for _, j := range reg.Jobs {
		attempts = max(attempts, j.Settings.MaxAttempts)
	}
	return min((limit+1)*attempts, monitorFailingRows)
}

// jobLeases puts each job's lease, when held, into snap, and the clock the
// leases were judged by into snap.LeasesReadBy, from held: the snapshot's
// held job leases, which leave out released and expired leases, as the
// lease check would. Past its limit (more job leases held at once than one
// answer holds) the jobs it did not reach are read one by one, and judged
// by a clock read after them.
func (m *Monitor) jobLeases(ctx context.Context, snap *absence.Snapshot, res store.LeaseListResult) error {
	held := make(map[string]store.Lease, len(res.Leases))
	for _, l := range res.Leases {
		held[l.Name] = l
	}
	complete := len(res.Leases) < store.MaxRunListLimit
	snap.LeasesReadBy = res.Now
	for name, d := range snap.Jobs {
		lease := snap.Registry.Jobs[name].LeaseName()
		if lease == "" {
			continue
		}
		l, ok := held[lease]
		if !ok && !complete {
			var err error
			if l, err = m.Store.LeaseGet(ctx, lease); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		d.Lease = l
		snap.Jobs[name] = d
	}
	if !complete {
		var err error
		if snap.LeasesReadBy, err = m.Store.Now(ctx); err != nil {
			return err
		}
	}
	return nil
}

// knownHashes is the digest of each replica's jobs this replica holds, for
// MonitorSnapshotParams.KnownJobs.
func (m *Monitor) knownHashes() map[string]string {
	known := make(map[string]string, len(m.jobs))
	for owner, k := range m.jobs {
		known[owner] = k.hash
	}
	return known
}

// fillJobs gives the replicas whose jobs the snapshot left out (held
// here) their jobs, and keeps the jobs of the rest for the next pass: of
// the replicas it lists, those with a digest. Jobs left out that are not
// held here fail the pass, and the next asks for all.
func (m *Monitor) fillJobs(replicas []store.Replica) error {
	kept := make(map[string]knownJobs, len(replicas))
	for i := range replicas {
		r := &replicas[i]
		if r.JobsUnchanged {
			k, ok := m.jobs[r.Owner]
			if !ok || k.hash != r.JobsHash {
				m.jobs = nil // the next pass asks for every replica's
				return fmt.Errorf("the store left out the jobs of replica %q as known, with a digest this replica does not hold", r.Owner)
			}
			r.Jobs, r.JobsUnchanged = k.jobs, false
		}
		if r.JobsHash != "" {
			kept[r.Owner] = knownJobs{hash: r.JobsHash, jobs: r.Jobs}
		}
	}
	m.jobs = kept
	return nil
}

// Lease is LeaseName as this replica holds it; zero when it does not.
func (m *Monitor) Lease() store.Lease { return m.lease }
