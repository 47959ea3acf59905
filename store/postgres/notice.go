package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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
// notice.sql, and sql/fragments/scheduleNotice.sql for "d") to their kinds.
// A letter not here (from a newer version) is passed over.
var noticeKinds = map[string]store.NoticeKind{
	"c": store.NoticeClaimed, "s": store.NoticeSettled, "e": store.NoticeEnded,
	"a": store.NoticeAlive, "g": store.NoticeGone, "d": store.NoticeSchedule,
	"b": store.NoticeBackfill,
}

// Listen delivers the notices that claims, finishes, abandons, heartbeats,
// removals and schedule changes publish (see store.Notices), on a connection of its own
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
// µs since the epoch, owner]; a schedule's change ("d") has its name in
// place of the job and its sequence number in place of the slot. A line it cannot read (from a newer
// version, say) is left out: notices are a saving, not a guarantee.
func parseNotice(line string) (store.Notice, bool) {
	kind, job, us, owner, ok := scanNoticeLine(line)
	if !ok {
		// Escapes, or a shape the scan does not know: the JSON decoder
		// decides (scanNoticeLine reads only what it would read alike).
		if kind, job, us, owner, ok = decodeNoticeLine(line); !ok {
			return store.Notice{}, false
		}
	}
	k, ok := noticeKinds[kind]
	if !ok {
		return store.Notice{}, false
	}
	n := store.Notice{Kind: k, Job: job, Owner: owner}
	switch k {
	case store.NoticeClaimed, store.NoticeSettled, store.NoticeEnded:
		n.Slot = time.UnixMicro(us).UTC()
	case store.NoticeSchedule:
		n.Seq = us
	}
	return n, true
}

// decodeNoticeLine reads a notice line with the JSON decoder. (A function
// of its own: the pointers it hands the decoder would otherwise make
// parseNotice's variables escape, and cost the scan four allocations.)
func decodeNoticeLine(line string) (kind, job string, us int64, owner string, ok bool) {
	err := json.Unmarshal([]byte(line), &[]any{&kind, &job, &us, &owner})
	return kind, job, us, owner, err == nil
}

// scanNoticeLine reads a notice line as json_build_array writes it when
// nothing in it needs an escape: ["c", "job", 1700000000000000, "owner"].
// Every replica reads every line every other replica's claims and ends
// publish, thousands a second under load, and the JSON decoder spent most
// of a listener's time on them. It reports false for anything else (an
// escape, another shape), which the decoder then reads; where it reports
// true it reads what the decoder would (FuzzNoticeLine). The strings it
// returns share the line's memory.
func scanNoticeLine(line string) (kind, job string, us int64, owner string, ok bool) {
	p := noticeScanner{s: line}
	p.skip('[')
	kind = p.str()
	p.skip(',')
	job = p.str()
	p.skip(',')
	us = p.int()
	p.skip(',')
	owner = p.str()
	p.skip(']')
	p.space()
	return kind, job, us, owner, !p.bad && p.i == len(p.s)
}

// noticeScanner reads a notice line from the left; once bad, it stays so.
type noticeScanner struct {
	s   string
	i   int
	bad bool
}

func (p *noticeScanner) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *noticeScanner) skip(c byte) {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return
	}
	p.bad = true
}

// str reads a string without escapes, control characters or invalid UTF-8
// (the decoder would rewrite those).
func (p *noticeScanner) str() string {
	p.skip('"')
	if p.bad {
		return ""
	}
	start := p.i
	for p.i < len(p.s) {
		switch c := p.s[p.i]; {
		case c == '"':
			v := p.s[start:p.i]
			p.i++
			if !utf8.ValidString(v) {
				p.bad = true
			}
			return v
		case c == '\\' || c < 0x20:
			p.bad = true
			return ""
		}
		p.i++
	}
	p.bad = true
	return ""
}

// int reads an integer as JSON writes one: an optional minus, then digits
// without a leading zero, no fraction or exponent, within int64.
func (p *noticeScanner) int() int64 {
	p.space()
	if p.bad {
		return 0
	}
	start := p.i
	if p.i < len(p.s) && p.s[p.i] == '-' {
		p.i++
	}
	first := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	digits := p.s[first:p.i]
	if digits == "" || (len(digits) > 1 && digits[0] == '0') {
		p.bad = true
		return 0
	}
	if p.i < len(p.s) && (p.s[p.i] == '.' || p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.bad = true // a fraction or an exponent: the decoder's to judge
		return 0
	}
	v, err := strconv.ParseInt(p.s[start:p.i], 10, 64)
	if err != nil {
		p.bad = true
		return 0
	}
	return v
}
