// Package registry is a replica's side of the replica registry
// (store.Monitor): a heartbeat at start, after a job is added, and every
// Every, all from the scheduler's loop on its clock, and the row's removal
// at Stop, once the loop ended, so a late heartbeat never writes the row
// back.
package registry

import (
	"context"
	"errors"
	"os"
	"runtime/debug"
	"sort"
	"sync"
	"time"

	"github.com/cronfence/cronfence/internal/service"
	"github.com/cronfence/cronfence/store"
)

// Heartbeat keeps the replica's row. Set its exported fields before its
// first Beat. With a negative Every it keeps no row.
type Heartbeat struct {
	*service.Base
	Every   time.Duration
	Version string
	Timers  bool // the replica fires slots (not an API-only one)
	// Jobs returns how many jobs the replica registers and how many were
	// ever added: the row is sent whole again after one was.
	Jobs func() (count int, added uint64)
	// JobRows returns the replica's jobs as the row records them.
	JobRows func() []store.ReplicaJob
	// Kinds, when set, returns the handler kinds the replica runs stored
	// schedules of, sent with the jobs: a kind added counts in Jobs'
	// added.
	Kinds func() []string
	// Offset is the replica's last measured clock offset.
	Offset func() time.Duration
	// Answered is told of each heartbeat's answer: the database stamped
	// the row with its clock (db) between sent and answered
	// (dbclock.Clock.FromHeartbeat).
	Answered func(ctx context.Context, now, sent, answered, db time.Time)

	mu      sync.Mutex
	next    time.Time // when the next heartbeat is due at the latest
	failing bool      // the last heartbeat failed; warned once per streak
	// The jobs go to the store only when they changed since the last
	// heartbeat that recorded them (store.Replica.JobsUnchanged): with
	// thousands of jobs every heartbeat wrote and read back megabytes.
	// recordedGen is the count of jobs added the store holds, when recorded
	// (false until a heartbeat succeeds, and again after one fails).
	recordedGen uint64
	recorded    bool
}

// Tick sends the heartbeat when it is due, when the jobs changed, and at
// every tick after one failed.
func (h *Heartbeat) Tick(ctx context.Context, now time.Time) {
	if h.Every < 0 {
		return
	}
	_, gen := h.Jobs()
	h.mu.Lock()
	due := !h.recorded || h.recordedGen != gen || !now.Before(h.next)
	h.mu.Unlock()
	if due {
		h.Beat(ctx, now)
	}
}

// Beat records this replica. A failure is logged (once until the next
// success) and retried at the next tick.
func (h *Heartbeat) Beat(ctx context.Context, now time.Time) {
	if h.Every < 0 {
		return
	}
	// Read before the row is built: a job added in between is then in the
	// row but not in gen, and only makes the next heartbeat send it again.
	count, gen := h.Jobs()
	h.mu.Lock()
	unchanged := h.recorded && h.recordedGen == gen
	h.mu.Unlock()
	err := store.ValidateReplicaJobCount(count)
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
			h.Log.Warn("cronfence: replica heartbeat failed; retrying at the next tick", "error", err)
		}
		h.failing = true
		return
	}
	if h.failing {
		h.Log.Info("cronfence: replica heartbeat recorded again")
	}
	h.failing = false
	h.next = now.Add(h.Every)
	h.recorded, h.recordedGen = true, gen
}

// send is one heartbeat round trip: the row with this replica's jobs, or,
// when they are unchanged since the last one recorded, without them. Its
// answer serves as the clock check when one is due.
func (h *Heartbeat) send(ctx context.Context, now time.Time, unchanged bool) error {
	row := h.row(unchanged) // built before the clock starts: only the round trip bounds the offset
	bctx, cancel := h.Bounded(ctx)
	defer cancel()
	sent := h.Clock.Now()
	row, err := h.Store.ReplicaHeartbeat(bctx, row)
	answered := h.Clock.Now()
	if err != nil {
		return err
	}
	if h.Answered != nil {
		h.Answered(ctx, now, sent, answered, row.HeartbeatAt)
	}
	return nil
}

// Stop deletes this replica's row. A failure only leaves the row to age:
// readers judge liveness by HeartbeatAt, and Prune removes it after the
// retention.
func (h *Heartbeat) Stop() {
	if h.Every < 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), service.StopTimeout)
	defer cancel()
	if err := h.Store.ReplicaRemove(ctx, h.Owner); err != nil {
		h.Log.Warn("cronfence: could not remove this replica from the registry; its row ages out", "error", err)
	}
}

// row is this replica as the registry records it; without its jobs when
// they are unchanged since the last heartbeat recorded them. (A store
// refuses a row of more than store.MaxReplicaJobs jobs; beat checks the
// count first rather than build one of megabytes at every tick.)
func (h *Heartbeat) row(jobsUnchanged bool) store.Replica {
	row := store.Replica{
		Owner:         h.Owner,
		Host:          Hostname(),
		PID:           os.Getpid(),
		Version:       h.Version,
		ClockOffset:   h.Offset(),
		Timers:        h.Timers,
		JobsUnchanged: jobsUnchanged,
	}
	if jobsUnchanged {
		return row
	}
	jobs := h.JobRows()
	sort.Slice(jobs, func(i, j int) bool { return jobs[i].Name < jobs[j].Name })
	row.Jobs = jobs
	if h.Kinds != nil {
		row.Kinds = h.Kinds()
	}
	return row
}

// Hostname is this host's name as the registry records it.
var Hostname = sync.OnceValue(func() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown-host"
	}
	if len(h) > store.MaxReplicaTextBytes {
		h = h[:store.MaxReplicaTextBytes]
	}
	return h
})

// State says whether the last heartbeat failed, and whether the store holds
// the replica's row with its jobs as they were then.
func (h *Heartbeat) State() (failing, recorded bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failing, h.recorded
}

// BuildVersion is the main module's version from the build info; for a
// build from a source tree, "devel" and the VCS revision.
var BuildVersion = sync.OnceValue(func() string {
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
