package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cronfence/cronfence/store"
)

var _ store.Notices = (*Store)(nil)

// noticeChannel is the LISTEN/NOTIFY channel of the schema's notices:
// short (a channel name is cut at 63 bytes, a schema name may have 63) and
// distinct per schema, so two installations in one database never hear
// each other's slots.
func noticeChannel(schema string) string {
	h := fnv.New64a()
	h.Write([]byte("cronfence.notices:" + schema))
	return fmt.Sprintf("cronfence_%016x", h.Sum64())
}

// noticeRetryEvery is how long Listen waits to listen again after its
// connection broke or could not be had.
const noticeRetryEvery = time.Second

// noticeKinds maps the letters the statements publish (sql/fragments/
// notice.sql) to their kinds.
var noticeKinds = map[string]store.NoticeKind{
	"c": store.NoticeClaimed, "s": store.NoticeSettled, "e": store.NoticeEnded,
	"a": store.NoticeAlive, "g": store.NoticeGone,
}

// Listen delivers the notices that claims, finishes, abandons, heartbeats
// and removals publish (see store.Notices), on a connection of its own
// taken out of the pool: LISTEN, then a wait on the idle connection,
// which costs the database nothing while no notice comes. When the
// connection breaks it delivers a NoticeLost and listens again every
// noticeRetryEvery, delivering a NoticeGap each time it starts, and then
// a NoticeClaimed for every slot running (one statement).
func (s *Store) Listen(ctx context.Context, fn func(store.Notice)) error {
	for {
		_ = s.listenOnce(ctx, fn) // any error: listen again, after a pause
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(noticeRetryEvery):
		}
	}
}

// listenOnce listens on one connection until it breaks or ctx ends.
func (s *Store) listenOnce(ctx context.Context, fn func(store.Notice)) error {
	if err := s.usable(); err != nil {
		return err
	}
	pooled, err := s.pool.Acquire(ctx)
	if err != nil {
		return s.translate("acquire the notice connection", err)
	}
	// Out of the pool for good: a LISTEN must not be handed to another
	// caller, and the pool's other connections stay free for statements.
	conn := pooled.Hijack()
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{noticeChannel(s.schema)}.Sanitize()); err != nil {
		return s.translate("listen for notices", err)
	}
	// The slots running now, read after LISTEN (a run that starts
	// meanwhile is told twice at worst) and told after the gap, before
	// any notice that came since: what they say is older.
	running, err := s.runningSlots(ctx)
	if err != nil {
		return err
	}
	fn(store.Notice{Kind: store.NoticeGap})
	for _, n := range running {
		fn(n)
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			fn(store.Notice{Kind: store.NoticeLost})
			return err
		}
		for line := range strings.SplitSeq(n.Payload, "\n") {
			if notice, ok := parseNotice(line); ok {
				fn(notice)
			}
		}
	}
}

// runningSlots is a NoticeClaimed for every slot running now: their
// claims were told before this listener listened, or while it did not.
func (s *Store) runningSlots(ctx context.Context) ([]store.Notice, error) {
	rows, err := s.pool.Query(ctx, s.q.slotListRunning)
	if err != nil {
		return nil, s.translate("list running slots", err)
	}
	running, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Notice, error) {
		n := store.Notice{Kind: store.NoticeClaimed}
		err := row.Scan(&n.Job, &n.Slot, &n.Owner)
		n.Slot = n.Slot.UTC()
		return n, err
	})
	if err != nil {
		return nil, s.translate("list running slots", err)
	}
	return running, nil
}

// parseNotice reads one line of a notice's payload: [kind, job, slot in
// µs since the epoch, owner]. A line it cannot read (from a newer
// version, say) is left out: notices are a saving, not a guarantee.
func parseNotice(line string) (store.Notice, bool) {
	var kind, job, owner string
	var us int64
	if err := json.Unmarshal([]byte(line), &[]any{&kind, &job, &us, &owner}); err != nil {
		return store.Notice{}, false
	}
	k, ok := noticeKinds[kind]
	if !ok {
		return store.Notice{}, false
	}
	n := store.Notice{Kind: k, Job: job, Owner: owner}
	if k == store.NoticeClaimed || k == store.NoticeSettled || k == store.NoticeEnded {
		n.Slot = time.UnixMicro(us).UTC()
	}
	return n, true
}
