package cronfence

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/cronfence/cronfence/internal/absence"
	"github.com/cronfence/cronfence/store"
)

// The absence monitor: every CheckEvery, one replica at a time (the holder
// of the lease MonitorLeaseName) gathers a snapshot of the replica registry
// and of each registered job's lease, latest claim and recent runs, evaluates
// the checks of package absence on it, and reconciles their verdict with
// the alerts open in the store: AlertRaise for each alert that should be
// open, AlertResolve for each open one that should not. Both are atomic in
// the store, so an alert is raised once and resolved once however many
// replicas check, and only the replica whose call changed it logs it and
// tells its Observer. docs/alerts.md describes the checks.

// MonitorLeaseName is the lease held by the replica that runs the absence
// checks. Its holder keeps it from pass to pass (renewing it each pass,
// with a TTL of two passes), so the checks run once per CheckEvery across
// the cluster, and another replica takes over within two passes of the
// holder's death. Readers judge whether the checks run by its renewals.
const MonitorLeaseName = "cronfence:monitor"

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
	// alertRefreshEvery is how often an open alert that the checks still
	// find, unchanged, has its LastSeenAt refreshed: each refresh is a
	// committed write, and hundreds of alerts open at once (an outage)
	// should not cost hundreds of writes every pass.
	alertRefreshEvery = time.Minute
)

// errNotRegistered: this replica is not live in the replica registry yet
// (no heartbeat recorded), so the registry it reads may be incomplete and
// its verdicts on drift and orphans unsafe.
var errNotRegistered = errors.New("this replica is not in the replica registry yet")

// monitorState is the monitor's part of a Scheduler.
type monitorState struct {
	mu      sync.Mutex
	next    time.Time // next pass, on this replica's clock
	running bool      // a pass is in progress
	passes  sync.WaitGroup
	// Only the pass in progress (one at a time), and stopMonitor after the
	// last, touch what follows.
	lease  store.Lease // MonitorLeaseName while this replica holds it
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

// checkAbsence starts a pass of the absence checks when one is due, in a
// goroutine of its own so that a slow pass never delays a fire. A replica
// without a registry row (HeartbeatEvery negative) runs none.
func (s *Scheduler) checkAbsence(ctx context.Context, now time.Time) {
	// Without a registry row of its own (registers), a replica's checks
	// would all wait for it (see errNotRegistered).
	if !s.registers() || s.cfg.CheckEvery < 0 {
		return
	}
	m := &s.monitor
	m.mu.Lock()
	// A next pass further away than CheckEvery means this clock went back:
	// the pass is due now rather than after the jump.
	if m.running || (now.Before(m.next) && m.next.Sub(now) <= s.cfg.CheckEvery) {
		m.mu.Unlock()
		return
	}
	m.next, m.running = now.Add(s.cfg.CheckEvery), true
	m.mu.Unlock()
	// Stop waits for it (it ends at once: ctx is the loop's, cancelled
	// first).
	m.passes.Add(1)
	s.beside(func() {
		defer m.passes.Done()
		defer func() { m.mu.Lock(); m.running = false; m.mu.Unlock() }()
		// One bound for the whole pass: a few reads and the alerts' writes.
		ctx, cancel := s.bounded(ctx)
		defer cancel()
		s.monitorPass(ctx)
	})
}

// monitorPass is one pass: lease, snapshot, evaluation, reconciliation. A
// snapshot that could not be read whole changes nothing: no evidence is
// not evidence of health.
func (s *Scheduler) monitorPass(ctx context.Context) {
	if !s.runsChecks() {
		s.releaseMonitorLease(ctx) // when held: hand it to the one that does
		return
	}
	now, ok := s.monitorLeaseHeld(ctx)
	if !ok {
		return
	}
	th := s.cfg.Alerts.absence(s.cfg.Retention)
	snap, open, err := s.monitorSnapshot(ctx, now, th)
	if errors.Is(err, errNotRegistered) {
		// Hand the checks to a replica that is registered, rather than
		// hold them here.
		s.log.Debug("cronfence: absence checks wait for this replica's heartbeat")
		s.releaseMonitorLease(ctx)
		return
	}
	const failed = "cronfence: absence checks skipped: could not read their snapshot"
	if err != nil {
		if ctx.Err() == nil {
			s.warnRepeated(failed, "error", err)
		}
		return
	}
	s.failures.over(failed)
	s.reconcileAlerts(ctx, now, absence.Evaluate(snap, th), open)
}

// monitorLeaseHeld renews MonitorLeaseName, or takes it when free, and
// returns the database clock as the lease saw it; false when another replica holds
// it or the store cannot be reached.
func (s *Scheduler) monitorLeaseHeld(ctx context.Context) (time.Time, bool) {
	m := &s.monitor
	ttl := 2 * s.cfg.CheckEvery
	if m.lease.Generation != 0 {
		const failed = "cronfence: could not renew the monitor lease"
		l, err := s.store.LeaseRenew(ctx, store.LeaseRenewParams{LeaseRef: m.lease.Ref(), TTL: ttl})
		if err == nil {
			s.failures.over(failed)
			m.lease = l
			return l.RenewedAt, true
		}
		if !errors.Is(err, store.ErrLeaseLost) {
			if ctx.Err() == nil {
				s.warnRepeated(failed, "error", err)
			}
			return time.Time{}, false
		}
		s.log.Info("cronfence: lost the monitor lease; another replica runs the absence checks", "generation", m.lease.Generation)
		m.lease = store.Lease{}
	}
	l, ok := s.takeLease(ctx, MonitorLeaseName, ttl)
	if !ok {
		return time.Time{}, false
	}
	m.lease = l
	s.log.Info("cronfence: this replica runs the absence checks", "generation", l.Generation, "every", s.cfg.CheckEvery)
	return l.AcquiredAt, true
}

// stopMonitor waits for a pass in progress and gives MonitorLeaseName up,
// so another replica takes the checks over at its next pass rather than after
// the lease's TTL. The loop calls it as it ends: no pass starts after.
func (s *Scheduler) stopMonitor() {
	s.monitor.passes.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), removeTimeout)
	defer cancel()
	s.releaseMonitorLease(ctx)
}

// releaseMonitorLease gives MonitorLeaseName up, when held.
func (s *Scheduler) releaseMonitorLease(ctx context.Context) {
	m := &s.monitor
	if m.lease.Generation == 0 {
		return
	}
	if _, err := s.store.LeaseRelease(context.WithoutCancel(ctx), m.lease.Ref()); err != nil {
		s.log.Warn("cronfence: could not release the monitor lease; it expires at its TTL", "error", err)
	}
	m.lease = store.Lease{}
}

// monitorSnapshot reads what the checks judge, and the open alerts. Round
// trips: 1 for the replicas, job states, recent runs, open alerts and held
// job leases (Store.MonitorSnapshot), 1 per 1,000 jobs the live replicas
// register (their runs, RunListPerJob), 1 per job with a deadline (the
// claim of its deadline slot), and, past the lease answer's limit, the
// leases it did not hold one by one (see jobLeases).
func (s *Scheduler) monitorSnapshot(ctx context.Context, now time.Time, th absence.Thresholds) (absence.Snapshot, []store.Alert, error) {
	var snap absence.Snapshot
	all, err := s.store.MonitorSnapshot(ctx, store.MonitorSnapshotParams{
		RecentRuns: monitorRecentRuns, OpenAlerts: store.MaxRunListLimit,
		Leases:    store.LeaseListParams{Prefix: "job:", Limit: store.MaxRunListLimit},
		KnownJobs: s.monitor.knownHashes(),
	})
	if err != nil {
		return snap, nil, err
	}
	if err := s.monitor.fillJobs(all.Replicas); err != nil {
		return snap, nil, err
	}
	reg := absence.NewRegistry(all.Replicas, now, th.ReplicaStale, &s.monitor.scheds)
	if !reg.IsLive(s.cfg.Owner) {
		return snap, nil, errNotRegistered
	}
	snap.Registry, snap.States, snap.Recent = reg, all.JobStates, all.RecentRuns
	snap.Jobs = make(map[string]absence.JobData, len(reg.Jobs))
	names := reg.Names()
	// Every job's newest runs, as many as every check but failing needs;
	// then more of those whose rows read hold no success, for failing:
	// a success ends what that check reads, so a job that succeeded
	// lately needs no more rows (with 10,000 jobs, the rows failing
	// would need of every job were most of a pass's work).
	perJob := min(max(th.SkipStreak+1, monitorJobRuns), store.MaxRunListLimit)
	runs, err := s.runsPerJob(ctx, names, perJob)
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
		longer, err := s.runsPerJob(ctx, againNames, more)
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
			if d.DeadlineSlot, err = s.store.SlotGet(ctx, name, slot); err != nil && !errors.Is(err, store.ErrNotFound) {
				return snap, nil, err
			}
		}
		snap.Jobs[name] = d
	}
	if err := s.jobLeases(ctx, &snap, all.Leases); err != nil {
		return snap, nil, err
	}
	return snap, all.OpenAlerts, nil
}

// runsPerJob reads the newest limit runs of each job named, in statements
// of store.MaxRunListJobs jobs.
func (s *Scheduler) runsPerJob(ctx context.Context, names []string, limit int) ([][]store.Run, error) {
	runs := make([][]store.Run, 0, len(names))
	for chunk := range slices.Chunk(names, store.MaxRunListJobs) {
		got, err := s.store.RunListPerJob(ctx, store.RunListPerJobParams{Jobs: chunk, Limit: limit})
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
func (s *Scheduler) jobLeases(ctx context.Context, snap *absence.Snapshot, res store.LeaseListResult) error {
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
			if l, err = s.store.LeaseGet(ctx, lease); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		d.Lease = l
		snap.Jobs[name] = d
	}
	if !complete {
		var err error
		if snap.LeasesReadBy, err = s.store.Now(ctx); err != nil {
			return err
		}
	}
	return nil
}

// reconcileAlerts raises what should be open (refreshing the message and
// last-seen time of what already is, when they changed or every
// alertRefreshEvery) and resolves what no longer should be, among the open
// alerts the checks could judge. One round trip per alert raised,
// refreshed or resolved. now is the database clock of the pass.
func (s *Scheduler) reconcileAlerts(ctx context.Context, now time.Time, res absence.Result, open []store.Alert) {
	opened := make(map[absence.Key]store.Alert, len(open))
	for _, a := range open {
		opened[absence.Key{Kind: a.Kind, Subject: a.Subject}] = a
	}
	want := make(map[absence.Key]bool, len(res.Alerts))
	for _, a := range res.Alerts {
		want[a.Key()] = true
		if cur, ok := opened[a.Key()]; ok && cur.Message == a.Message && maps.Equal(cur.Details, a.Details) &&
			cur.Fingerprint == absence.Fingerprint(a.Kind, a.Details) && now.Sub(cur.LastSeenAt) < alertRefreshEvery {
			continue
		}
		s.raiseAlert(ctx, store.AlertRaiseParams{
			Kind: a.Kind, Subject: a.Subject, Message: a.Message, Details: a.Details, RaisedBy: s.cfg.Owner,
		})
	}
	for _, a := range open {
		if want[absence.Key{Kind: a.Kind, Subject: a.Subject}] || !res.Judged(a.Kind, a.Subject) {
			continue
		}
		s.resolveAlert(ctx, a.Kind, a.Subject)
	}
}

// raiseAlert raises (or refreshes) an alert, with its fingerprint; only
// the replica whose call opened it, or ended its acknowledgement (it
// changed), logs it and tells its Observer. A failure is logged, unless
// ctx ended (the pass's bound, or the loop stopping).
func (s *Scheduler) raiseAlert(ctx context.Context, p store.AlertRaiseParams) {
	p.Fingerprint = absence.Fingerprint(p.Kind, p.Details)
	res, err := s.store.AlertRaise(ctx, p)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("cronfence: could not raise an alert", "kind", p.Kind, "subject", p.Subject, "error", err)
		}
		return
	}
	alert := res.Alert
	switch {
	case res.Raised:
		s.log.Warn("cronfence: alert raised: "+alert.Message, "kind", alert.Kind, "subject", alert.Subject,
			"alert_id", alert.ID, "details", alert.Details)
		s.observe(AlertEvent{Alert: alert, Raised: true})
	case !res.EndedAck.IsZero():
		s.log.Warn("cronfence: alert raised again: it changed since it was acknowledged: "+alert.Message, "kind", alert.Kind,
			"subject", alert.Subject, "alert_id", alert.ID, "details", alert.Details,
			"acknowledged_by", res.EndedAck.By, "acknowledged_at", res.EndedAck.At)
		s.observe(AlertEvent{Alert: alert, Raised: true, EndedAck: res.EndedAck})
	}
}

// resolveAlert resolves the open alert of (kind, subject), if any; only the
// replica whose call closed it logs it and tells its Observer.
func (s *Scheduler) resolveAlert(ctx context.Context, kind store.AlertKind, subject string) {
	alert, resolved, err := s.store.AlertResolve(ctx, kind, subject)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("cronfence: could not resolve an alert", "kind", kind, "subject", subject, "error", err)
		}
		return
	}
	if resolved {
		s.log.Info("cronfence: alert resolved", "kind", kind, "subject", subject, "alert_id", alert.ID,
			"raised_at", alert.RaisedAt, "message", alert.Message)
		s.observe(AlertEvent{Alert: alert})
	}
}

// absence converts the thresholds, with defaults applied, to the checks':
// a negative threshold turns its check off (zero there). retention is
// Config.Retention, the age past which pruning may have deleted a slot
// (negative: never pruned, zero there).
func (t AlertThresholds) absence(retention time.Duration) absence.Thresholds {
	return absence.Thresholds{
		SkipStreak:   max(t.SkipStreak, 0),
		Failing:      max(t.FailingSlots, 0),
		ClockOffset:  max(t.ClockOffset, 0),
		ReplicaStale: t.ReplicaStale,
		OrphanWindow: max(t.OrphanWindow, 0),
		Retention:    max(retention, 0),
	}
}

// knownHashes is the digest of each replica's jobs this replica holds, for
// MonitorSnapshotParams.KnownJobs.
func (m *monitorState) knownHashes() map[string]string {
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
func (m *monitorState) fillJobs(replicas []store.Replica) error {
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
