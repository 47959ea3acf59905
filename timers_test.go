package cronfence

import (
	"testing"
	"time"
)

func TestEveryIsAnchoredAcrossReplicasStartedApart(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		l := newLedger()
		job := Job{Name: "seven", Schedule: "@every 7s", Handler: l.handler(c.db)}
		c.start("early", 0, job)
		c.advance(3*time.Second, time.Second)
		c.start("late", 0, job)
		c.advance(30*time.Second, time.Second)
		l.mu.Lock()
		defer l.mu.Unlock()
		if len(l.runs["seven"]) < 4 {
			t.Fatalf("only %d slots ran", len(l.runs["seven"]))
		}
		for slot, by := range l.runs["seven"] {
			if slot.Unix()%7 != 0 || len(by) != 1 {
				t.Fatalf("slot %s (Unix %d) ran by %v: want multiples of 7 s since the epoch, once", slot, slot.Unix(), by)
			}
		}
	})
}
