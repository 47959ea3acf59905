package cronfence

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cronfence/cronfence/store"
)

// The checks keep each replica's jobs between passes, so that a store that
// digests them (PostgreSQL) sends only those that changed: a replica left
// out as known gets the jobs kept for its digest, and the kept jobs follow
// every snapshot (new digests, replicas gone).
func TestMonitorKeepsReplicasJobsBetweenPasses(t *testing.T) {
	report := []store.ReplicaJob{{Name: "report"}}
	mail := []store.ReplicaJob{{Name: "mail"}, {Name: "report"}}
	var m monitor
	first := []store.Replica{{Owner: "a", Jobs: report, JobsHash: "h1"}, {Owner: "b", Jobs: mail, JobsHash: "h2"}, {Owner: "c", Jobs: report}}
	if err := m.fillJobs(first); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"a": "h1", "b": "h2"}, m.knownHashes()); diff != "" {
		t.Fatalf("known after the first pass (-want +got):\n%s", diff)
	}
	// a unchanged and left out; b changed; c gone.
	second := []store.Replica{{Owner: "a", JobsUnchanged: true, JobsHash: "h1"}, {Owner: "b", Jobs: report, JobsHash: "h3"}}
	if err := m.fillJobs(second); err != nil {
		t.Fatal(err)
	}
	if second[0].JobsUnchanged || !cmp.Equal(second[0].Jobs, report) {
		t.Fatalf("replica a left out as known came back as %+v, want its kept jobs", second[0])
	}
	if diff := cmp.Diff(map[string]string{"a": "h1", "b": "h3"}, m.knownHashes()); diff != "" {
		t.Fatalf("known after the second pass (-want +got):\n%s", diff)
	}
	// A store that leaves out jobs this replica does not hold is wrong:
	// the pass fails rather than judge without them.
	if err := m.fillJobs([]store.Replica{{Owner: "a", JobsUnchanged: true, JobsHash: "h2"}}); err == nil {
		t.Fatal("jobs left out under another digest than the one held were taken as the held ones")
	}
	if known := m.knownHashes(); len(known) != 0 {
		t.Fatalf("after a pass failed on jobs left out, the next still names %v as known; want none", known)
	}
	if err := m.fillJobs([]store.Replica{{Owner: "d", JobsUnchanged: true, JobsHash: "h9"}}); err == nil {
		t.Fatal("jobs left out that this replica never held were taken as none")
	}
}

// snapshotSpy records what the checks ask of MonitorSnapshot and what
// each replica's row came back as.
type snapshotSpy struct {
	store.Store
	mu      sync.Mutex
	known   []map[string]string // KnownJobs of each call
	digests []map[string]string // each call's answer: owner → JobsHash, where the store keeps one
	leftOut []map[string]bool   // each call's answer: owners whose jobs were left out
}

func (s *snapshotSpy) MonitorSnapshot(ctx context.Context, p store.MonitorSnapshotParams) (store.MonitorSnapshot, error) {
	res, err := s.Store.MonitorSnapshot(ctx, p)
	if err != nil {
		return res, err
	}
	digests, leftOut := map[string]string{}, map[string]bool{}
	for _, r := range res.Replicas {
		if r.JobsHash != "" {
			digests[r.Owner] = r.JobsHash
		}
		if r.JobsUnchanged {
			leftOut[r.Owner] = true
		}
	}
	s.mu.Lock()
	s.known = append(s.known, maps.Clone(p.KnownJobs))
	s.digests = append(s.digests, digests)
	s.leftOut = append(s.leftOut, leftOut)
	s.mu.Unlock()
	return res, nil
}

func (s *snapshotSpy) calls() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.known) }

// The checks name the jobs they hold to the store at every pass after
// the first, so that PostgreSQL, which digests them, sends a replica's
// thousands of jobs only when they change. (The store's side is the
// conformance suite's; without this, a scheduler that never named them
// passed every test and read every replica's jobs every pass.)
func TestMonitorNamesTheJobsItHoldsToTheSnapshot(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		m := newMonitored(t, c)
		spy := &snapshotSpy{Store: c.open(t)}
		noop := func(ctx context.Context, run *Run) error { return nil }
		m.startWith(Config{Owner: "replica-0", Clock: offsetClock{m.db, 0}, Retention: -1, Observer: m.log.observer("replica-0"), Store: spy},
			Job{Name: "sync", Schedule: "@every 1m", Handler: noop})
		m.advanceUntil("three passes of the checks", 2*time.Minute, time.Second, func() bool { return spy.calls() >= 3 })

		spy.mu.Lock()
		defer spy.mu.Unlock()
		if len(spy.known[0]) != 0 {
			t.Errorf("the first pass named %v as known; it holds none yet", spy.known[0])
		}
		for i := 1; i < len(spy.known); i++ {
			if diff := cmp.Diff(spy.digests[i-1], spy.known[i], cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("pass %d named as known (-the digests the pass before read +named):\n%s", i+1, diff)
			}
		}
		if c.kind == "postgres" {
			if spy.digests[0]["replica-0"] == "" {
				t.Fatal("PostgreSQL returned no digest of the replica's jobs")
			}
			if !spy.leftOut[2]["replica-0"] {
				t.Error("the third pass read the replica's unchanged jobs again")
			}
		}
	})
}
