package monitor

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cronfence/cronfence/store"
)

// The checks keep each replica's jobs between passes, so that a store that
// digests them (PostgreSQL) sends only those that changed: a replica left
// out as known gets the jobs kept for its digest, and the kept jobs follow
// every snapshot (new digests, replicas gone).
func TestMonitorKeepsReplicasJobsBetweenPasses(t *testing.T) {
	report := []store.ReplicaJob{{Name: "report"}}
	mail := []store.ReplicaJob{{Name: "mail"}, {Name: "report"}}
	var m Monitor
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
