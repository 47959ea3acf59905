package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cronfence/cronfence/store"
)

// TestMigrateVersion1To2: a schema at version 1, with data in it, migrates
// to version 2 (and the down file of 2 leaves version 1 intact on the way).
func TestMigrateVersion1To2(t *testing.T) {
	t.Parallel()
	s, schema := newStore(t)
	if err := s.MigrateDown(ctx(t), 1); err != nil {
		t.Fatalf("MigrateDown(1): %v", err)
	}
	if db, bin, err := s.SchemaVersion(ctx(t)); err != nil || db != 1 || bin < 2 {
		t.Fatalf("SchemaVersion after MigrateDown(1) = %d, %d, %v; want 1, 2 or more", db, bin, err)
	}
	for _, table := range []string{"alerts", "replicas"} {
		var exists bool
		if err := s.Pool().QueryRow(ctx(t), `SELECT to_regclass($1) IS NOT NULL`, pgx.Identifier{schema, table}.Sanitize()).Scan(&exists); err != nil || exists {
			t.Fatalf("table %s at version 1: exists %v, %v", table, exists, err)
		}
	}
	l, ok, err := s.LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: "job:x", Owner: "o", TTL: time.Minute})
	if err != nil || !ok {
		t.Fatalf("LeaseAcquire at version 1: %v, %v", ok, err)
	}
	if _, err := s.AlertList(ctx(t), store.AlertListParams{}); !errors.Is(err, store.ErrSchemaOutdated) {
		t.Fatalf("AlertList at version 1 = %v, want ErrSchemaOutdated", err)
	}

	if err := openOn(t, schema).Migrate(ctx(t)); err != nil {
		t.Fatalf("Migrate from version 1: %v", err)
	}
	if db, bin, err := s.SchemaVersion(ctx(t)); err != nil || db < 2 || db != bin {
		t.Fatalf("SchemaVersion after Migrate = %d, %d, %v; want the binary's version, 2 or more", db, bin, err)
	}
	if got, err := s.LeaseGet(ctx(t), l.Name); err != nil || got.Generation != l.Generation {
		t.Fatalf("the version 1 lease after migrating = %+v, %v; want %+v", got, err, l)
	}
	if res, err := s.AlertRaise(ctx(t), store.AlertRaiseParams{Kind: store.AlertSlowRun, Subject: "x", RaisedBy: "o"}); err != nil || !res.Raised {
		t.Fatalf("AlertRaise after Migrate = %+v, %v", res, err)
	}
	if _, err := s.ReplicaHeartbeat(ctx(t), store.Replica{Owner: "o", Host: "h"}); err != nil {
		t.Fatalf("ReplicaHeartbeat after Migrate: %v", err)
	}
}

// PostgreSQL digests each replica's jobs, so the absence checks' snapshot
// leaves out the jobs a caller already holds: the shared suite
// (MonitorSnapshotLeavesOutKnownJobs) accepts a store that always sends
// them, and would pass if this store stopped digesting.
func TestMonitorSnapshotDigestsJobs(t *testing.T) {
	s, _ := newStore(t)
	jobs := []store.ReplicaJob{{Name: "report", Schedule: "*/5 * * * *", LeaseTTL: time.Minute, Overlap: "skip", MaxAttempts: 3, Hash: "h"}}
	if _, err := s.ReplicaHeartbeat(ctx(t), store.Replica{Owner: "replica-a", Host: "h", PID: 1, Version: "v1", Timers: true, Jobs: jobs}); err != nil {
		t.Fatal(err)
	}
	first, err := s.MonitorSnapshot(ctx(t), store.MonitorSnapshotParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Replicas) != 1 || first.Replicas[0].JobsHash == "" || len(first.Replicas[0].Jobs) != 1 {
		t.Fatalf("first snapshot's replicas = %+v; want replica-a with its job and a digest", first.Replicas)
	}
	second, err := s.MonitorSnapshot(ctx(t), store.MonitorSnapshotParams{KnownJobs: map[string]string{"replica-a": first.Replicas[0].JobsHash}})
	if err != nil {
		t.Fatal(err)
	}
	if r := second.Replicas[0]; !r.JobsUnchanged || r.Jobs != nil || r.JobsHash != first.Replicas[0].JobsHash {
		t.Fatalf("snapshot naming the digest held: replica = %+v; want its jobs left out, said unchanged", r)
	}
}

// TestMigrateVersion9To10: an alert open at version 9 (no acknowledgement)
// stays through the down file of 10 and back up, with no fingerprint and
// no acknowledgement, and can then be acknowledged.
func TestMigrateVersion9To10(t *testing.T) {
	t.Parallel()
	s, schema := newStore(t)
	if _, err := s.AlertRaise(ctx(t), store.AlertRaiseParams{Kind: store.AlertSlowRun, Subject: "report", Message: "slow", RaisedBy: "o", Fingerprint: "f"}); err != nil {
		t.Fatal(err)
	}
	if err := s.MigrateDown(ctx(t), 9); err != nil {
		t.Fatalf("MigrateDown(9): %v", err)
	}
	if db, bin, err := s.SchemaVersion(ctx(t)); err != nil || db != 9 || bin < 10 {
		t.Fatalf("SchemaVersion after MigrateDown(9) = %d, %d, %v; want 9, 10 or more", db, bin, err)
	}
	if err := openOn(t, schema).Migrate(ctx(t)); err != nil {
		t.Fatalf("Migrate from version 9: %v", err)
	}
	list, err := s.AlertList(ctx(t), store.AlertListParams{})
	if err != nil || len(list) != 1 || list[0].Message != "slow" || list[0].Fingerprint != "" || !list[0].Ack.IsZero() {
		t.Fatalf("the version 9 alert after migrating = %+v, %v; want it kept, no fingerprint, not acknowledged", list, err)
	}
	if a, err := s.AlertAcknowledge(ctx(t), store.AlertAcknowledgeParams{Kind: store.AlertSlowRun, Subject: "report", By: "ops"}); err != nil || !a.Acknowledged() {
		t.Fatalf("AlertAcknowledge after Migrate = %+v, %v", a, err)
	}
}
