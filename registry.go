package cronfence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"sync"
	"time"

	"github.com/cronfence/cronfence/store"
)

// removeTimeout bounds the round trip that removes this replica's row at
// Stop, so a store that went away does not hold up shutdown for long.
const removeTimeout = 5 * time.Second

// registry is this replica's side of the replica registry (store.Monitor):
// a heartbeat at Start, after Register adds a job, and every
// Config.HeartbeatEvery, all from the scheduler's tick on its clock, and the
// row's removal at Stop. A replica whose store lacks Monitor, or whose
// HeartbeatEvery is negative, keeps no row.
//
// The heartbeat is sent from Start and from the loop goroutine only, and
// the removal runs after that loop ended, so a late heartbeat can never
// write the row back after its removal.
type registry struct {
	mu      sync.Mutex
	next    time.Time // when the next heartbeat is due at the latest
	failing bool      // the last heartbeat failed; warned once per streak
	// The jobs go to the store only when they changed since the last
	// heartbeat that recorded them (store.Replica.JobsUnchanged): with
	// thousands of jobs every heartbeat wrote and read back megabytes.
	// jobsGen counts Registers; recordedGen is the count whose jobs the
	// store holds, when recorded (false until a heartbeat succeeds, and
	// again after one fails).
	jobsGen, recordedGen uint64
	recorded             bool
}

// jobsRecorded reports whether the store holds this replica's row with
// its jobs as they are now. The caller holds r.mu.
func (r *registry) jobsRecorded() bool { return r.recorded && r.recordedGen == r.jobsGen }

// registers reports whether this replica keeps a registry row (and so
// runs the absence checks and raises alerts).
func (s *Scheduler) registers() bool { return s.cfg.HeartbeatEvery >= 0 }

// jobsChanged marks the registry row stale after Register: the next tick
// sends it again.
func (s *Scheduler) jobsChanged() {
	s.reg.mu.Lock()
	s.reg.jobsGen++
	s.reg.mu.Unlock()
}

// heartbeatIfDue sends the heartbeat when it is due, when the jobs
// changed, and at every tick after a heartbeat failed. Called from tick
// with the replica's clock.
func (s *Scheduler) heartbeatIfDue(ctx context.Context, now time.Time) {
	if !s.registers() {
		return
	}
	s.reg.mu.Lock()
	due := !s.reg.jobsRecorded() || !now.Before(s.reg.next)
	s.reg.mu.Unlock()
	if due {
		s.heartbeat(ctx, now)
	}
}

// heartbeat records this replica. A failure is logged (once until the next
// success) and retried at the next tick, since the next heartbeat stays
// due.
func (s *Scheduler) heartbeat(ctx context.Context, now time.Time) {
	if !s.registers() {
		return
	}
	s.reg.mu.Lock()
	// Read before the row is built: a Register in between is then in the
	// row but not in gen, and only makes the next heartbeat send it again.
	gen := s.reg.jobsGen
	unchanged := s.reg.jobsRecorded()
	s.reg.mu.Unlock()
	err := s.tooManyJobs()
	if err == nil {
		err = s.sendHeartbeat(ctx, now, unchanged)
		if unchanged && errors.Is(err, store.ErrNotFound) {
			// The row went away (removed, pruned): send it whole, at once.
			err = s.sendHeartbeat(ctx, now, false)
		}
	}

	s.reg.mu.Lock()
	defer s.reg.mu.Unlock()
	if err != nil {
		// Whether it was recorded is unknown (the answer may be what was
		// lost): the next tick sends it again, with the jobs, whatever
		// the interval.
		s.reg.recorded = false
		if !s.reg.failing && ctx.Err() == nil {
			s.log.Warn("cronfence: replica heartbeat failed; retrying at the next tick", "error", err)
		}
		s.reg.failing = true
		return
	}
	if s.reg.failing {
		s.log.Info("cronfence: replica heartbeat recorded again")
	}
	s.reg.failing = false
	s.reg.next = now.Add(s.cfg.HeartbeatEvery)
	s.reg.recorded, s.reg.recordedGen = true, gen
}

// sendHeartbeat is one heartbeat round trip: the row with this replica's
// jobs, or, when they are unchanged since the last one recorded, without
// them. Its answer measures the clock when a check is due.
func (s *Scheduler) sendHeartbeat(ctx context.Context, now time.Time, unchanged bool) error {
	row := s.replicaRow(unchanged) // built before the clock starts: only the round trip bounds the offset
	bctx, cancel := s.bounded(ctx)
	defer cancel()
	sent := s.cfg.Clock.Now()
	row, err := s.store.ReplicaHeartbeat(bctx, row)
	answered := s.cfg.Clock.Now()
	if err != nil {
		return err
	}
	s.clockFromHeartbeat(ctx, now, sent, answered, row.HeartbeatAt)
	return nil
}

// removeReplica deletes this replica's row at Stop. A failure only leaves
// the row to age: readers judge liveness by HeartbeatAt, and Prune removes
// it after the retention.
func (s *Scheduler) removeReplica() {
	if !s.registers() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), removeTimeout)
	defer cancel()
	if err := s.store.ReplicaRemove(ctx, s.cfg.Owner); err != nil {
		s.log.Warn("cronfence: could not remove this replica from the registry; its row ages out", "error", err)
	}
}

// tooManyJobs returns the error every store answers a heartbeat of more
// than store.MaxReplicaJobs jobs with (Replica.Validate: Monitor's methods
// validate their arguments first), without building that row: for 100,000
// jobs it is 15 MB of job settings and as many JSON encodings and SHA-256
// sums, thrown away at every tick, since a failed heartbeat is retried at
// the next one.
func (s *Scheduler) tooManyJobs() error {
	s.mu.Lock()
	n := len(s.jobs)
	s.mu.Unlock()
	return store.ValidateReplicaJobCount(n)
}

// replicaRow is this replica as the registry records it; without its jobs
// when they are unchanged since the last heartbeat recorded them.
func (s *Scheduler) replicaRow(jobsUnchanged bool) store.Replica {
	row := store.Replica{
		Owner:         s.cfg.Owner,
		Host:          hostname(),
		PID:           os.Getpid(),
		Version:       s.cfg.Version,
		ClockOffset:   s.ClockOffset(),
		Timers:        !s.cfg.DisableTimers,
		JobsUnchanged: jobsUnchanged,
	}
	if jobsUnchanged {
		return row
	}
	s.mu.Lock()
	jobs := make([]store.ReplicaJob, 0, len(s.jobs))
	for _, r := range s.jobs {
		jobs = append(jobs, replicaJob(r.Job))
	}
	s.mu.Unlock()
	sort.Slice(jobs, func(i, j int) bool { return jobs[i].Name < jobs[j].Name })
	row.Jobs = jobs
	return row
}

// replicaJob is a registered job's settings, as every replica must
// declare them alike, with their hash. A zone left empty is UTC, so a
// replica that spells it out does not differ from one that does not.
func replicaJob(j Job) store.ReplicaJob {
	zone := j.TimeZone
	if zone == "" {
		zone = "UTC"
	}
	rj := store.ReplicaJob{
		Name: j.Name, Schedule: j.Schedule, TimeZone: zone, Timeout: j.Timeout, LeaseTTL: j.LeaseTTL,
		CatchUpWindow: j.CatchUpWindow, Overlap: string(j.Overlap), Deadline: j.Deadline,
		MaxAttempts: j.MaxAttempts, RetryBackoff: j.RetryBackoff, Disabled: j.Disabled,
	}
	rj.Hash = settingsHash(rj)
	return rj
}

// settingsHash is the first 16 hex digits of the SHA-256 of the settings'
// JSON (Hash left empty). encoding/json writes struct fields in declaration
// order, so equal settings give equal bytes on every replica of one build.
func settingsHash(rj store.ReplicaJob) string {
	rj.Hash = ""
	b, err := json.Marshal(rj)
	if err != nil {
		// Strings, durations, ints and bools always encode.
		panic(fmt.Sprintf("cronfence: encoding job settings: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

// Replicas returns the replica registry: every replica that recorded
// itself, by owner, with its last heartbeat (by the database clock: compare
// with Store().Now, not this replica's clock). A replica that crashed stays
// listed, its heartbeat ageing, until pruned.
func (s *Scheduler) Replicas(ctx context.Context) ([]store.Replica, error) {
	replicas, err := s.store.ReplicaList(ctx)
	if err != nil {
		return nil, fmt.Errorf("cronfence: list replicas: %w", err)
	}
	return replicas, nil
}

var hostname = sync.OnceValue(func() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown-host"
	}
	if len(h) > store.MaxReplicaTextBytes {
		h = h[:store.MaxReplicaTextBytes]
	}
	return h
})

// buildVersion is the main module's version from the build info; for a
// build from a source tree, "devel" and the VCS revision.
var buildVersion = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, st := range bi.Settings {
		switch st.Key {
		case "vcs.revision":
			rev = st.Value
		case "vcs.modified":
			modified = st.Value
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified == "true" {
		rev += "-dirty"
	}
	return "devel+" + rev
})
