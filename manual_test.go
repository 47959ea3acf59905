package cronfence

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/mysql"
	"github.com/cronfence/cronfence/store/postgres"
	"github.com/cronfence/cronfence/store/sqlite"
)

// renameTable renames one of st's tables aside (or back), as an operator's
// mistake would.
func renameTable(t *testing.T, st store.Store, table string, back bool) {
	t.Helper()
	from, to := table, table+"_aside"
	if back {
		from, to = to, from
	}
	var err error
	switch s := st.(type) {
	case *postgres.Store:
		_, err = s.Pool().Exec(context.Background(), `ALTER TABLE `+pgx.Identifier{s.Schema(), from}.Sanitize()+` RENAME TO `+pgx.Identifier{to}.Sanitize())
	case *sqlite.Store:
		_, err = s.DB().Exec(`ALTER TABLE cronfence_` + from + ` RENAME TO cronfence_` + to)
	case *mysql.Store:
		_, err = s.DB().Exec(`RENAME TABLE cronfence_` + from + ` TO cronfence_` + to)
	default:
		t.Fatalf("cannot rename a table of %T", st)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a log destination tests read while replicas write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The pause table renamed under running replicas (seed 002: a broken table
// must not silently stop every job): declared-enabled jobs keep running, on
// their declared value, a job paused by an override among them; a
// declared-disabled job stays off; a replica started meanwhile starts and
// runs them the same way; each replica warns once. Renamed back, the
// override is honoured at the next slot. (Before: every claim failed, the
// replicas took the store for unreachable, and no job ran.)
func TestBrokenPauseTableFailsOpen(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		l := newLedger()
		jobs := []Job{
			{Name: "on", Schedule: "* * * * *", Handler: l.handler(c.db)},
			{Name: "off", Schedule: "* * * * *", Disabled: true, Handler: l.handler(c.db)},
			{Name: "paused", Schedule: "* * * * *", Handler: l.handler(c.db)},
		}
		logs := &syncBuffer{}
		a := c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: -1, Logger: slog.New(slog.NewTextHandler(logs, nil))}, jobs...)
		if _, err := a.SetEnabled(context.Background(), "paused", new(bool), "ana", "vendor outage"); err != nil {
			t.Fatal(err)
		}
		c.advance(time.Minute, time.Second) // 12:01: the override holds
		m1 := c.db.Now()
		wantRan := func(when string, slot time.Time, want map[string]int) {
			t.Helper()
			for job, n := range want {
				if got := l.ran(job, slot); got != n {
					t.Fatalf("%s: %s ran slot %s %d times, want %d", when, job, slot.Format(time.TimeOnly), got, n)
				}
			}
		}
		wantRan("before", m1, map[string]int{"on": 1, "off": 0, "paused": 0})

		renameTable(t, a.e.Store, "job_state", false)
		c.advance(time.Minute, time.Second) // 12:02
		m2 := c.db.Now()
		wantRan("renamed", m2, map[string]int{"on": 1, "off": 0, "paused": 1})
		if n := strings.Count(logs.String(), "the pause overrides cannot be read"); n != 1 {
			t.Fatalf("the warning was logged %d times, want once:\n%s", n, logs.String())
		}
		c.start("b", 0, jobs...)            // starts on the damaged schema
		c.advance(time.Minute, time.Second) // 12:03
		wantRan("renamed, two replicas", c.db.Now(), map[string]int{"on": 1, "off": 0, "paused": 1})

		renameTable(t, a.e.Store, "job_state", true)
		c.advance(time.Minute, time.Second) // 12:04: the override decides again
		wantRan("back", c.db.Now(), map[string]int{"on": 1, "off": 0, "paused": 0})
		if !strings.Contains(logs.String(), "the pause overrides read again") {
			t.Fatalf("the recovery was not logged:\n%s", logs.String())
		}
		l.wantNoneTwiceOrEarly(t)
		c.wantNeverDown()
	})
}
