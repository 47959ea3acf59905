// Package runlog is a run's logger: every line it logs goes to the
// replica's log (filtered by its level, with the run's attributes) and,
// formatted as one line at every level, into a bounded buffer that the
// run's row keeps.
package runlog

import (
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/cronfence/cronfence/store"
)

// Buffer keeps the lines a run logs, bounded like the run row. The zero
// value is ready.
type Buffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *Buffer) add(line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, line)
	if len(b.lines) > 2*store.MaxRunLogLines {
		b.lines = append(b.lines[:0:0], b.lines[len(b.lines)-store.MaxRunLogLines:]...)
	}
}

func (b *Buffer) Lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.lines...)
}

// Logger is a run's logger: records go to base and to logs, with attrs
// (the job, slot, attempt...) on base's side only.
func Logger(base slog.Handler, logs *Buffer, attrs []any) *slog.Logger {
	return slog.New(&teeHandler{next: &lazyHandler{base: base}, buf: logs}).With(attrs...)
}

// teeHandler sends records to the scheduler's handler and, formatted as one
// line, to the run's buffer.
type teeHandler struct {
	next *lazyHandler
	buf  *Buffer
}

func (h *teeHandler) Enabled(ctx context.Context, l slog.Level) bool { return true }

func (h *teeHandler) Handle(ctx context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String())
	b.WriteByte(' ')
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteByte(' ')
		b.WriteString(a.String())
		return true
	})
	h.buf.add(b.String())
	if next := h.next.handler(); next.Enabled(ctx, r.Level) {
		return next.Handle(ctx, r)
	}
	return nil
}

func (h *teeHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &teeHandler{next: &lazyHandler{parent: h.next, attrs: attrs}, buf: h.buf}
}

func (h *teeHandler) WithGroup(name string) slog.Handler {
	return &teeHandler{next: &lazyHandler{parent: h.next, group: name}, buf: h.buf}
}

// lazyHandler is a handler derived from another by WithAttrs or WithGroup,
// derived only when a record first reaches it. Every run's logger carries
// the job's attributes, and a handler such as slog's text and JSON ones
// formats them as it derives: at thousands of runs a second that was a
// tenth of a replica's CPU, for runs that mostly log nothing.
type lazyHandler struct {
	parent *lazyHandler // nil: base is the handler itself
	base   slog.Handler
	attrs  []slog.Attr // one of attrs and group
	group  string

	once    sync.Once
	derived slog.Handler
}

func (l *lazyHandler) handler() slog.Handler {
	if l.parent == nil {
		return l.base
	}
	l.once.Do(func() {
		if p := l.parent.handler(); l.group != "" {
			l.derived = p.WithGroup(l.group)
		} else {
			l.derived = p.WithAttrs(l.attrs)
		}
	})
	return l.derived
}
