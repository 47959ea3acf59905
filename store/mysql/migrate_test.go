package mysql

import (
	"database/sql"
	"testing"

	driver "github.com/go-sql-driver/mysql"

	"github.com/cronfence/cronfence/store"
)

// TestMigrateVersion1To2: a database left at version 1 by an older binary,
// with an alert open, migrates to version 2: the alert stays, with no
// fingerprint and no acknowledgement, and can be acknowledged. The up file
// run again (a run cut off after its ALTER, before its version was
// recorded) changes nothing; the down file removes the columns and the up
// file puts them back.
func TestMigrateVersion1To2(t *testing.T) {
	t.Parallel()
	url := newDatabase(t)
	old := openStore(t, url, nil)
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	if err := old.migrate(bg(), ms[:1]); err != nil {
		t.Fatalf("applying version 1 alone: %v", err)
	}
	if _, err := old.DB().Exec(old.q(`INSERT INTO {{prefix}}alerts (kind, subject, message, details, raised_by, raised_at, last_seen_at)
		VALUES ('slow_run', 'report', 'slow', '{}', 'o', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))`)); err != nil {
		t.Fatal(err)
	}

	s := openStore(t, url, nil)
	if err := s.Migrate(bg()); err != nil {
		t.Fatalf("Migrate from version 1: %v", err)
	}
	if db, bin, err := s.SchemaVersion(bg()); err != nil || db < 2 || db != bin {
		t.Fatalf("SchemaVersion after Migrate = %d, %d, %v; want the binary's, 2 or more", db, bin, err)
	}
	list, err := s.AlertList(bg(), store.AlertListParams{})
	if err != nil || len(list) != 1 || list[0].Fingerprint != "" || !list[0].Ack.IsZero() || list[0].Message != "slow" {
		t.Fatalf("the version 1 alert after migrating = %+v, %v; want it kept, no fingerprint, not acknowledged", list, err)
	}
	if a, err := s.AlertAcknowledge(bg(), store.AlertAcknowledgeParams{Kind: store.AlertSlowRun, Subject: "report", By: "ops"}); err != nil || a.Ack.By != "ops" {
		t.Fatalf("AlertAcknowledge after Migrate = %+v, %v", a, err)
	}

	run := func(file, text string) {
		t.Helper()
		connector, err := driver.NewConnector(s.migrateConfig())
		if err != nil {
			t.Fatal(err)
		}
		db := sql.OpenDB(connector)
		defer db.Close()
		if _, err := db.Exec(s.q(text)); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	v2 := ms[1]
	down, err := migrationFiles.ReadFile("migrations/" + v2.Base + ".down.sql")
	if err != nil {
		t.Fatal(err)
	}
	columns := func() int {
		t.Helper()
		var n int
		if err := s.DB().QueryRow(`SELECT count(*) FROM information_schema.columns
			WHERE table_schema = DATABASE() AND table_name = ? AND column_name IN ('fingerprint', 'acknowledged_by', 'acknowledged_at', 'acknowledged_note')`,
			s.t("alerts")).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	run(v2.Base+".up.sql again", v2.Up)
	if n := columns(); n != 4 {
		t.Fatalf("after the up file ran twice: %d of the 4 columns", n)
	}
	if a, err := s.AlertList(bg(), store.AlertListParams{}); err != nil || a[0].Ack.By != "ops" {
		t.Fatalf("after the up file ran twice, the alert = %+v, %v; want its acknowledgement kept", a, err)
	}
	run(v2.Base+".down.sql", string(down))
	if n := columns(); n != 0 {
		t.Fatalf("after the down file: %d of the 4 columns left", n)
	}
	run(v2.Base+".down.sql again", string(down))
	run(v2.Base+".up.sql after the down file", v2.Up)
	if n := columns(); n != 4 {
		t.Fatalf("after down and up: %d of the 4 columns", n)
	}
}

// TestMigrateRunsByStart: a database at version 2 migrates to version 3,
// the index that lists a job's runs by start. The up file run again (a run
// cut off after the index was made, before its version was recorded)
// changes nothing, as does the down file run again; down and up remove the
// index and put it back.
func TestMigrateRunsByStart(t *testing.T) {
	t.Parallel()
	url := newDatabase(t)
	old := openStore(t, url, nil)
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	v3 := ms[2]
	if v3.Version != 3 || v3.Base != "003_runs_by_start" {
		t.Fatalf("migration 3 is %s", v3.Base)
	}
	if err := old.migrate(bg(), ms[:2]); err != nil {
		t.Fatalf("applying versions 1 and 2: %v", err)
	}
	s := openStore(t, url, nil)
	if err := s.Migrate(bg()); err != nil {
		t.Fatalf("Migrate from version 2: %v", err)
	}
	if db, bin, err := s.SchemaVersion(bg()); err != nil || db < 3 || db != bin {
		t.Fatalf("SchemaVersion after Migrate = %d, %d, %v; want the binary's, 3 or more", db, bin, err)
	}
	indexes := func() int {
		t.Helper()
		var n int
		if err := s.DB().QueryRow(`SELECT count(DISTINCT index_name) FROM information_schema.statistics
			WHERE table_schema = DATABASE() AND table_name = ? AND index_name = ?`, s.t("runs"), s.t("runs_job_started")).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	run := func(file, text string) {
		t.Helper()
		connector, err := driver.NewConnector(s.migrateConfig())
		if err != nil {
			t.Fatal(err)
		}
		db := sql.OpenDB(connector)
		defer db.Close()
		if _, err := db.Exec(s.q(text)); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	down, err := migrationFiles.ReadFile("migrations/" + v3.Base + ".down.sql")
	if err != nil {
		t.Fatal(err)
	}
	if n := indexes(); n != 1 {
		t.Fatalf("after Migrate: %d runs_job_started indexes, want 1", n)
	}
	run(v3.Base+".up.sql again", v3.Up)
	if n := indexes(); n != 1 {
		t.Fatalf("after the up file ran twice: %d runs_job_started indexes, want 1", n)
	}
	run(v3.Base+".down.sql", string(down))
	if n := indexes(); n != 0 {
		t.Fatalf("after the down file: %d runs_job_started indexes, want none", n)
	}
	run(v3.Base+".down.sql again", string(down))
	run(v3.Base+".up.sql after the down file", v3.Up)
	if n := indexes(); n != 1 {
		t.Fatalf("after down and up: %d runs_job_started indexes, want 1", n)
	}
}

// TestMigrateSchedules: a database at version 3 with a replica recorded
// migrates to version 4, the stored schedules: the replica stays, with no
// kinds, and schedules can be written. The up file run again (a run cut
// off before its version was recorded) changes nothing, as does the down
// file run again; down and up remove the tables and the column and put
// them back.
func TestMigrateSchedules(t *testing.T) {
	t.Parallel()
	url := newDatabase(t)
	old := openStore(t, url, nil)
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	v4 := ms[3]
	if v4.Version != 4 || v4.Base != "004_schedules" {
		t.Fatalf("migration 4 is %s", v4.Base)
	}
	if err := old.migrate(bg(), ms[:3]); err != nil {
		t.Fatalf("applying versions 1 to 3: %v", err)
	}
	if _, err := old.DB().Exec(old.q(`INSERT INTO {{prefix}}replicas (owner, host, pid, version, started_at, heartbeat_at, clock_offset_ns, timers, jobs)
		VALUES ('r1', 'h', 1, 'v', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), 0, TRUE, '[]')`)); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, url, nil)
	if err := s.Migrate(bg()); err != nil {
		t.Fatalf("Migrate from version 3: %v", err)
	}
	if db, bin, err := s.SchemaVersion(bg()); err != nil || db < 4 || db != bin {
		t.Fatalf("SchemaVersion after Migrate = %d, %d, %v; want the binary's, 4 or more", db, bin, err)
	}
	if list, err := s.ReplicaList(bg()); err != nil || len(list) != 1 || list[0].Owner != "r1" || list[0].Kinds != nil {
		t.Fatalf("the version 3 replica after migrating = %+v, %v; want it kept, with no kinds", list, err)
	}
	set := store.ScheduleSettings{Spec: "@every 1m", Kind: "report"}
	if _, err := s.ScheduleCreate(bg(), store.ScheduleCreateParams{Name: "report", Settings: set, By: "ops"}); err != nil {
		t.Fatalf("ScheduleCreate after Migrate: %v", err)
	}

	run := func(file, text string) {
		t.Helper()
		connector, err := driver.NewConnector(s.migrateConfig())
		if err != nil {
			t.Fatal(err)
		}
		db := sql.OpenDB(connector)
		defer db.Close()
		if _, err := db.Exec(s.q(text)); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	objects := func() int {
		t.Helper()
		var tables, columns int
		if err := s.DB().QueryRow(`SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name IN (?, ?, ?)`,
			s.t("schedules"), s.t("schedule_changes"), s.t("schedule_seq")).Scan(&tables); err != nil {
			t.Fatal(err)
		}
		if err := s.DB().QueryRow(`SELECT count(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ? AND column_name = 'kinds'`,
			s.t("replicas")).Scan(&columns); err != nil {
			t.Fatal(err)
		}
		return tables + columns
	}
	down, err := migrationFiles.ReadFile("migrations/" + v4.Base + ".down.sql")
	if err != nil {
		t.Fatal(err)
	}
	run(v4.Base+".up.sql again", v4.Up)
	if n := objects(); n != 4 {
		t.Fatalf("after the up file ran twice: %d of the 3 tables and 1 column", n)
	}
	if got, err := s.ScheduleGet(bg(), "report"); err != nil || got.Version != 1 {
		t.Fatalf("after the up file ran twice, the schedule = %+v, %v; want it kept", got, err)
	}
	if log, err := s.ScheduleChanges(bg(), store.ScheduleChangesParams{}); err != nil || log.Latest != 1 {
		t.Fatalf("after the up file ran twice, the log = %+v, %v; want its one change, the sequence kept", log, err)
	}
	run(v4.Base+".down.sql", string(down))
	if n := objects(); n != 0 {
		t.Fatalf("after the down file: %d of the 3 tables and 1 column left", n)
	}
	run(v4.Base+".down.sql again", string(down))
	run(v4.Base+".up.sql after the down file", v4.Up)
	if n := objects(); n != 4 {
		t.Fatalf("after down and up: %d of the 3 tables and 1 column", n)
	}
	// The versions after 4 alter its tables: each up file runs twice
	// (cut off before its version was recorded), and its down file too.
	for _, m := range ms[4:] {
		down, err := migrationFiles.ReadFile("migrations/" + m.Base + ".down.sql")
		if err != nil {
			t.Fatal(err)
		}
		run(m.Base+".up.sql", m.Up)
		run(m.Base+".up.sql again", m.Up)
		run(m.Base+".down.sql", string(down))
		run(m.Base+".down.sql again", string(down))
		run(m.Base+".up.sql after the down file", m.Up)
	}
	if _, err := s.ScheduleCreate(bg(), store.ScheduleCreateParams{Name: "report", Settings: set, By: "ops"}); err != nil {
		t.Fatalf("ScheduleCreate after down and up: %v", err)
	}
}
