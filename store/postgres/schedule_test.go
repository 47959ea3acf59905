package postgres_test

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cronfence/cronfence/store"
)

// Every replica hears of a stored schedule's change as it commits, with the
// change's sequence number, so it reads the log at once rather than at its
// next poll. A write that is refused, or that rolls back after its notice
// was sent (here a check at commit refuses it), is not heard, and gives
// its sequence number back: the log has no gap.
func TestNoticesTellScheduleChanges(t *testing.T) {
	t.Parallel()
	s, schema := newStore(t)
	other := openOn(t, schema)
	l := listen(t, s)
	want := func(name string, seq int64) {
		t.Helper()
		if n := l.next(t); n.Kind != store.NoticeSchedule || n.Job != name || n.Seq != seq {
			t.Fatalf("notice %+v; want schedule %q changed at %d", n, name, seq)
		}
	}
	set := store.ScheduleSettings{Spec: "@every 1m", Kind: "report"}

	if _, err := other.ScheduleCreate(ctx(t), store.ScheduleCreateParams{Name: "report", Settings: set, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	want("report", 1)
	if _, err := other.ScheduleUpdate(ctx(t), store.ScheduleUpdateParams{Name: "report", Version: 1, Settings: set, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	want("report", 2)
	if _, err := other.ScheduleUpdate(ctx(t), store.ScheduleUpdateParams{Name: "report", Version: 1, Settings: set, By: "ops"}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("update at a stale version: %v, want a conflict", err)
	}
	l.noneBefore(t, s, "a refused update")

	// A check at commit that refuses the change of "doomed": the write's
	// statement ran, its notice was sent, and the commit rolls it back.
	if _, err := s.Pool().Exec(ctx(t), `
		CREATE FUNCTION `+pgx.Identifier{schema, "doom"}.Sanitize()+`() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.name = 'doomed' THEN RAISE EXCEPTION 'doomed at commit'; END IF;
			RETURN NULL;
		END $$;
		CREATE CONSTRAINT TRIGGER doom AFTER INSERT ON `+pgx.Identifier{schema, "schedule_changes"}.Sanitize()+`
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION `+pgx.Identifier{schema, "doom"}.Sanitize()+`()`); err != nil {
		t.Fatal(err)
	}
	if _, err := other.ScheduleCreate(ctx(t), store.ScheduleCreateParams{Name: "doomed", Settings: set, By: "ops"}); err == nil {
		t.Fatal("the create of doomed committed")
	}
	l.noneBefore(t, s, "a write rolled back")
	if _, err := s.ScheduleGet(ctx(t), "doomed"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ScheduleGet(doomed) after its rollback: %v, want ErrNotFound", err)
	}

	if _, err := other.ScheduleDelete(ctx(t), store.ScheduleDeleteParams{Name: "report", By: "ops"}); err != nil {
		t.Fatal(err)
	}
	want("report", 3)
	log, err := s.ScheduleChanges(ctx(t), store.ScheduleChangesParams{})
	if err != nil || log.Latest != 3 || len(log.Changes) != 3 {
		t.Fatalf("the log = %+v, %v; want changes 1 to 3, none lost to the rollback", log, err)
	}
}
