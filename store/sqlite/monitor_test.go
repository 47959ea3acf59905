package sqlite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// TestMigrateVersion1To2: a file left at version 1 by an older binary, with
// data in it, migrates to version 2: the monitoring tables appear and the
// older rows stay. A Store opened on the old file refuses monitoring calls
// with ErrSchemaOutdated until then.
func TestMigrateVersion1To2(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := newFile(t)
	old := openStore(t, path, nil)
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	// What the binary that knew only version 1 did.
	if done, err := old.migrateOne(ctx, ms[:1]); err != nil || done {
		t.Fatalf("applying version 1 alone: done %v, %v", done, err)
	}
	if db, _, err := old.SchemaVersion(ctx); err != nil || db != 1 {
		t.Fatalf("SchemaVersion after version 1 = %d, %v; want 1", db, err)
	}
	if _, err := old.DB().ExecContext(ctx, `INSERT INTO cronfence_leases VALUES ('job:x', 'o', 7, 1, 1, 1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := old.AlertRaise(ctx, store.AlertRaiseParams{Kind: store.AlertSlowRun, Subject: "x", RaisedBy: "o"}); !errors.Is(err, store.ErrSchemaOutdated) {
		t.Fatalf("AlertRaise at version 1 = %v, want ErrSchemaOutdated", err)
	}

	s := openStore(t, path, nil)
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate from version 1: %v", err)
	}
	if db, bin, err := s.SchemaVersion(ctx); err != nil || db < 2 || db != bin {
		t.Fatalf("SchemaVersion after Migrate = %d, %d, %v; want the binary's version, 2 or more", db, bin, err)
	}
	if l, err := s.LeaseGet(ctx, "job:x"); err != nil || l.Generation != 7 {
		t.Fatalf("the version 1 lease after migrating = %+v, %v; want generation 7", l, err)
	}
	if res, err := old.AlertRaise(ctx, store.AlertRaiseParams{Kind: store.AlertSlowRun, Subject: "x", RaisedBy: "o"}); err != nil || !res.Raised {
		t.Fatalf("AlertRaise after Migrate = %+v, %v", res, err)
	}
	if _, err := s.ReplicaHeartbeat(ctx, store.Replica{Owner: "o", Host: "h", Jobs: []store.ReplicaJob{{Name: "x", LeaseTTL: time.Minute}}}); err != nil {
		t.Fatalf("ReplicaHeartbeat after Migrate: %v", err)
	}
}

// TestMigrateVersion4To5: a file at version 4 with an alert open migrates
// to version 5: the alert stays, with no fingerprint and no
// acknowledgement, and can then be acknowledged.
func TestMigrateVersion4To5(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := newFile(t)
	old := openStore(t, path, nil)
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	for {
		done, err := old.migrateOne(ctx, ms[:4])
		if err != nil {
			t.Fatalf("applying versions 1 to 4: %v", err)
		}
		if done {
			break
		}
	}
	if _, err := old.DB().ExecContext(ctx, `INSERT INTO cronfence_alerts (kind, subject, message, details, raised_by, raised_at, last_seen_at)
		VALUES ('slow_run', 'report', 'slow', '{}', 'o', 1, 1)`); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, path, nil)
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate from version 4: %v", err)
	}
	list, err := s.AlertList(ctx, store.AlertListParams{})
	if err != nil || len(list) != 1 || list[0].Message != "slow" || list[0].Fingerprint != "" || !list[0].Ack.IsZero() {
		t.Fatalf("the version 4 alert after migrating = %+v, %v; want it kept, no fingerprint, not acknowledged", list, err)
	}
	if a, err := s.AlertAcknowledge(ctx, store.AlertAcknowledgeParams{Kind: store.AlertSlowRun, Subject: "report", By: "ops"}); err != nil || !a.Acknowledged() {
		t.Fatalf("AlertAcknowledge after Migrate = %+v, %v", a, err)
	}
}
