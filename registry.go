package cronfence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/cronfence/cronfence/store"
)

// heartbeat is this replica's side of the replica registry
// (store.Monitor): a heartbeat at Start, after Register adds a job, and
// every Config.HeartbeatEvery, all from the loop on its clock, and the
// row's removal at Stop, once the loop ended, so a late heartbeat never
// writes the row back. A replica with a negative HeartbeatEvery keeps no
// row.
type heartbeat struct {
	e    *env
	jobs *jobSet

	mu      sync.Mutex
	next    time.Time // when the next heartbeat is due at the latest
	failing bool      // the last heartbeat failed; warned once per streak
	// The jobs go to the store only when they changed since the last
	// heartbeat that recorded them (store.Replica.JobsUnchanged): with
	// thousands of jobs every heartbeat wrote and read back megabytes.
	// recordedGen is the jobSet generation the store holds, when recorded
	// (false until a heartbeat succeeds, and again after one fails).
	recordedGen uint64
	recorded    bool
}

// tick sends the heartbeat when it is due, when the jobs changed, and at
// every tick after one failed.
func (h *heartbeat) tick(ctx context.Context, now time.Time) {
	if !h.e.registers() {
		return
	}
	gen := h.jobs.generation()
	h.mu.Lock()
	due := !h.recorded || h.recordedGen != gen || !now.Before(h.next)
	h.mu.Unlock()
	if due {
		h.beat(ctx, now)
	}
}

// beat records this replica. A failure is logged (once until the next
// success) and retried at the next tick.
func (h *heartbeat) beat(ctx context.Context, now time.Time) {
	if !h.e.registers() {
		return
	}
	// Read before the row is built: a Register in between is then in the
	// row but not in gen, and only makes the next heartbeat send it again.
	gen := h.jobs.generation()
	h.mu.Lock()
	unchanged := h.recorded && h.recordedGen == gen
	h.mu.Unlock()
	err := store.ValidateReplicaJobCount(h.jobs.count())
	if err == nil {
		err = h.send(ctx, now, unchanged)
		if unchanged && errors.Is(err, store.ErrNotFound) {
			// The row went away (removed, pruned): send it whole, at once.
			err = h.send(ctx, now, false)
		}
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		// Whether it was recorded is unknown (the answer may be what was
		// lost): the next tick sends it again, with the jobs.
		h.recorded = false
		if !h.failing && ctx.Err() == nil {
			h.e.log.Warn("cronfence: replica heartbeat failed; retrying at the next tick", "error", err)
		}
		h.failing = true
		return
	}
	if h.failing {
		h.e.log.Info("cronfence: replica heartbeat recorded again")
	}
	h.failing = false
	h.next = now.Add(h.e.cfg.HeartbeatEvery)
	h.recorded, h.recordedGen = true, gen
}

// send is one heartbeat round trip: the row with this replica's jobs, or,
// when they are unchanged since the last one recorded, without them. Its
// answer serves as the clock check when one is due.
func (h *heartbeat) send(ctx context.Context, now time.Time, unchanged bool) error {
	row := h.row(unchanged) // built before the clock starts: only the round trip bounds the offset
	bctx, cancel := h.e.bounded(ctx)
	defer cancel()
	sent := h.e.cfg.Clock.Now()
	row, err := h.e.store.ReplicaHeartbeat(bctx, row)
	answered := h.e.cfg.Clock.Now()
	if err != nil {
		return err
	}
	h.e.clock.fromHeartbeat(ctx, now, sent, answered, row.HeartbeatAt)
	return nil
}

// stop deletes this replica's row. A failure only leaves the row to age:
// readers judge liveness by HeartbeatAt, and Prune removes it after the
// retention.
func (h *heartbeat) stop() {
	if !h.e.registers() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), removeTimeout)
	defer cancel()
	if err := h.e.store.ReplicaRemove(ctx, h.e.cfg.Owner); err != nil {
		h.e.log.Warn("cronfence: could not remove this replica from the registry; its row ages out", "error", err)
	}
}

// row is this replica as the registry records it; without its jobs when
// they are unchanged since the last heartbeat recorded them. (A store
// refuses a row of more than store.MaxReplicaJobs jobs; beat checks the
// count first rather than build one of megabytes at every tick.)
func (h *heartbeat) row(jobsUnchanged bool) store.Replica {
	cfg := &h.e.cfg
	row := store.Replica{
		Owner:         cfg.Owner,
		Host:          hostname(),
		PID:           os.Getpid(),
		Version:       cfg.Version,
		ClockOffset:   time.Duration(h.e.clock.offset.Load()),
		Timers:        h.e.timers(),
		JobsUnchanged: jobsUnchanged,
	}
	if jobsUnchanged {
		return row
	}
	all, _ := h.jobs.all()
	jobs := make([]store.ReplicaJob, 0, len(all))
	for _, r := range all {
		jobs = append(jobs, replicaJob(r.Job))
	}
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
