package absence_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/absence"
	"github.com/cronfence/cronfence/store"
)

// TestKindUnknown: kind_unknown is raised for a kind that enabled stored
// schedules name and no live replica with timers registers; not for one a
// live replica runs; not judged at all while the schedules were not read.
func TestKindUnknown(t *testing.T) {
	now := at("12:00:00")
	replicas := []store.Replica{
		{Owner: "a", Timers: true, HeartbeatAt: now, Kinds: []string{"report"}},
		{Owner: "dead", Timers: true, HeartbeatAt: now.Add(-time.Hour), Kinds: []string{"invoice"}},
		{Owner: "api", Timers: false, HeartbeatAt: now, Kinds: []string{"export"}},
	}
	used := map[string][]string{
		"report":  {"tenant-1"},
		"invoice": {"tenant-2", "tenant-3"},
		"export":  {"tenant-4"},
	}
	evaluate := func(used map[string][]string) absence.Result {
		reg := absence.NewRegistry(replicas, now, th.ReplicaStale, nil)
		return absence.Evaluate(absence.Snapshot{Registry: reg, StoredKinds: used}, th)
	}
	res := evaluate(used)
	var raised []string
	for _, a := range res.Alerts {
		if a.Kind == store.AlertKindUnknown {
			raised = append(raised, a.Subject)
			if a.Subject == "invoice" && !strings.Contains(a.Message, "tenant-2, tenant-3") {
				t.Errorf("the alert does not name the schedules that do not run: %s", a.Message)
			}
		}
	}
	if got, want := strings.Join(raised, ","), "export,invoice"; got != want {
		t.Fatalf("kind_unknown raised for %s; want %s (only a dead replica runs invoice, only an API-only one export)", got, want)
	}
	if !res.Judged(store.AlertKindUnknown, "report") {
		t.Fatal("kind_unknown of a kind a live replica runs is not judged: an open alert would never resolve")
	}
	if unread := evaluate(nil); unread.Judged(store.AlertKindUnknown, "invoice") {
		t.Fatal("kind_unknown judged while the stored schedules were not read: an open alert would be resolved without evidence")
	}
}
