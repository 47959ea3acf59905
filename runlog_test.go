package cronfence

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// jsonLines returns the JSON log lines in out whose msg is msg.
func jsonLines(t *testing.T, out *syncBuffer, msg string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, line := range strings.Split(out.String(), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == msg {
			lines = append(lines, m)
		}
	}
	return lines
}

// Every run ends with one log line naming the job, slot, attempt, result
// and duration: a successful run too, at INFO; a failed one at WARN.
func TestEveryRunEndsWithOneLogLine(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		var out syncBuffer
		log := slog.New(slog.NewJSONHandler(&out, nil))
		ok := Job{Name: "ok", Schedule: "0 * * * * *", Handler: func(context.Context, *Run) error { return nil }}
		bad := Job{Name: "bad", Schedule: "0 * * * * *", MaxAttempts: 1, Handler: func(context.Context, *Run) error {
			return errors.New("exit status 2")
		}}
		c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: -1, Logger: log}, ok, bad)
		slot := c.db.Now().Truncate(time.Minute).Add(time.Minute)
		c.advance(time.Minute, time.Second)

		ended := jsonLines(t, &out, "cronfence: run ended")
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
