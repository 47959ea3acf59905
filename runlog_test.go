package cronfence

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for the log's concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines returns the JSON log lines whose msg is msg.
func (l *lockedBuffer) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range bytes.Split(l.b.Bytes(), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// Every run ends with one log line naming the job, slot, attempt, result
// and duration: a successful run too, at INFO; a failed one at WARN.
func TestEveryRunEndsWithOneLogLine(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		var out lockedBuffer
		log := slog.New(slog.NewJSONHandler(&out, nil))
		ok := Job{Name: "ok", Schedule: "0 * * * * *", Handler: func(context.Context, *Run) error { return nil }}
		bad := Job{Name: "bad", Schedule: "0 * * * * *", MaxAttempts: 1, Handler: func(context.Context, *Run) error {
			return errors.New("exit status 2")
		}}
		c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: -1, Logger: log}, ok, bad)
		slot := c.db.Now().Truncate(time.Minute).Add(time.Minute)
		c.advance(time.Minute, time.Second)

		ended := out.lines(t, "cronfence: run ended")
		if len(ended) != 2 {
			t.Fatalf("%d run-end lines, want one per run: %v", len(ended), ended)
		}
		byJob := map[string]map[string]any{}
		for _, l := range ended {
			byJob[l["job"].(string)] = l
		}
		for job, want := range map[string][2]string{"ok": {"INFO", "success"}, "bad": {"WARN", "failure"}} {
			l := byJob[job]
			if l == nil || l["level"] != want[0] || l["result"] != want[1] || l["attempt"] != 1.0 ||
				l["slot"] != slot.Format(time.RFC3339) || l["origin"] != "scheduled" || l["duration"] == nil {
				t.Errorf("job %s's run-end line = %v; want level %s, result %s, attempt 1, slot %s, origin and duration",
					job, l, want[0], want[1], slot.Format(time.RFC3339))
			}
		}
	})
}
