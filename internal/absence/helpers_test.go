package absence_test

import (
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cronfence/cronfence/internal/absence"
	"github.com/cronfence/cronfence/store"
)

// t0 is a whole minute, so slot arithmetic stays readable.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func at(hms string) time.Time {
	d, err := time.Parse(time.TimeOnly, hms)
	if err != nil {
		panic(err)
	}
	return time.Date(t0.Year(), t0.Month(), t0.Day(), d.Hour(), d.Minute(), d.Second(), 0, time.UTC)
}

var th = absence.Thresholds{SkipStreak: 3, ClockOffset: 2 * time.Second, ReplicaStale: 30 * time.Second, OrphanWindow: 24 * time.Hour}

// job is a ReplicaJob with its hash derived from its settings, as a
// replica registers it.
func job(name, sched string, opts ...func(*store.ReplicaJob)) store.ReplicaJob {
	j := store.ReplicaJob{Name: name, Schedule: sched, LeaseTTL: 90 * time.Second, Overlap: "skip", MaxAttempts: 3}
	for _, o := range opts {
		o(&j)
	}
	sum := sha256.Sum256([]byte(fmt.Sprint(j.Schedule, j.TimeZone, j.Timeout, j.LeaseTTL, j.Overlap, j.Deadline, j.MaxAttempts, j.Disabled)))
	j.Hash = fmt.Sprintf("%x", sum[:6])
	return j
}

func deadline(d time.Duration) func(*store.ReplicaJob) {
	return func(j *store.ReplicaJob) { j.Deadline = d }
}

func timeout(d time.Duration) func(*store.ReplicaJob) {
	return func(j *store.ReplicaJob) { j.Timeout = d }
}

// replica is a replica started at started; its heartbeat, unless set with
// heartbeat, is the snapshot's now: it is live.
func replica(owner string, started time.Time, jobs ...store.ReplicaJob) store.Replica {
	return store.Replica{Owner: owner, Host: "h", StartedAt: started, Timers: true, Jobs: jobs}
}

func heartbeat(r store.Replica, at time.Time) store.Replica { r.HeartbeatAt = at; return r }

// snapshot builds a Snapshot at now.
func snapshot(now time.Time, replicas []store.Replica, jobs map[string]absence.JobData) absence.Snapshot {
	replicas = append([]store.Replica(nil), replicas...)
	for i := range replicas {
		if replicas[i].HeartbeatAt.IsZero() {
			replicas[i].HeartbeatAt = now
		}
	}
	return absence.Snapshot{Registry: absence.NewRegistry(replicas, now, th.ReplicaStale, nil), Jobs: jobs}
}

// got is an alert reduced to what a table states: its key and the details
// the case names.
type got struct {
	Kind    store.AlertKind
	Subject string
	Details map[string]string
}

// check evaluates s and compares the alerts with want; of each alert's
// details only the keys want names are compared.
func check(t *testing.T, s absence.Snapshot, thr absence.Thresholds, want ...got) absence.Result {
	t.Helper()
	res := absence.Evaluate(s, thr)
	var have []got
	for i, a := range res.Alerts {
		g := got{Kind: a.Kind, Subject: a.Subject}
		if a.Message == "" {
			t.Errorf("alert %s/%s has no message", a.Kind, a.Subject)
		}
		if i < len(want) && want[i].Details != nil {
			g.Details = map[string]string{}
			for k := range want[i].Details {
				g.Details[k] = a.Details[k]
			}
		}
		have = append(have, g)
	}
	if diff := cmp.Diff(want, have); diff != "" {
		for _, a := range res.Alerts {
			t.Logf("%s %s: %s %v", a.Kind, a.Subject, a.Message, a.Details)
		}
		t.Fatalf("alerts (-want +got):\n%s", diff)
	}
	return res
}
