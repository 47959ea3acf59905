package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/wait"
	"github.com/cronfence/cronfence/store"
)

// waitForLog waits until p's stderr contains s.
func waitForLog(t *testing.T, p *proc, s string) {
	t.Helper()
	wait.For(t, 30*time.Second, func() bool {
		if strings.Contains(p.stderr.String(), s) {
			return true
		}
		select {
		case <-p.done:
			t.Fatalf("cronfence exited with %d before logging %q; stderr:\n%s", p.code, s, p.stderr.String())
		default:
		}
		return false
	}, func() string {
		return fmt.Sprintf("cronfence has not logged %q; stderr:\n%s", s, p.stderr.String())
	})
}

// TestServeExample runs the README's first command, `cronfence serve
// --config examples/cronfence.yaml`, on a copy of the example in a fresh
// directory, then the same command a second time, as the README says. Only
// the example's output file is redirected (CRONFENCE_EXAMPLE_LOG; the
// example defaults to /tmp/cronfence-example.log). The SQLite file is the
// one beside the config; every example job runs (minutely at once, caught
// up, since the file says the jobs were first registered two minutes ago,
// by a replica that has stopped since, as in a deploy; tick at a slot both
// replicas serve; hello, whose output is in its run row), and no slot of any
// job runs twice.
func TestServeExample(t *testing.T) {
	t.Parallel()
	example, err := os.ReadFile(filepath.Join("..", "..", "examples", "cronfence.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "examples"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "examples", "cronfence.yaml"), example, 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "example.log")
	env := []string{"CRONFENCE_EXAMPLE_LOG=" + out}
	// A replica served this file two minutes ago: minutely existed then,
	// and its latest slot is one to catch up (catch-up never runs a slot
	// from before a job was first registered).
	dbFile := filepath.Join(dir, "examples", "cronfence.db")
	st := openArgs(t, []string{"--sqlite", dbFile})
	ctx := context.Background()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.JobRegister(ctx, store.JobRegisterParams{Jobs: []string{"minutely"}, Now: time.Now().Add(-2 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	a := startEnv(t, dir, env, "serve", "--config", "examples/cronfence.yaml")
	waitForLog(t, a, "cronfence: serving")
	b := startEnv(t, dir, env, "serve", "--config", "examples/cronfence.yaml")
	waitForLog(t, b, "cronfence: serving")
	joined := time.Now()

	// The file beside the config, not one in the working directory.
	if _, err := os.Stat(filepath.Join(dir, "cronfence.db")); !os.IsNotExist(err) {
		t.Fatalf("serve made a SQLite file in its working directory instead of beside the config (%v)", err)
	}
	// slotsOf returns the slots of job's lines in the output file.
	slotsOf := func(job string) []time.Time {
		var slots []time.Time
		for _, l := range slotLines(out) {
			f := strings.Fields(l)
			if len(f) < 2 || f[0] != job {
				continue
			}
			s, err := time.Parse(time.RFC3339, f[1])
			if err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			slots = append(slots, s)
		}
		return slots
	}
	helloRan := func() bool {
		runs, err := st.RunList(ctx, store.RunListParams{Job: "hello"})
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(runs, func(r store.Run) bool {
			return r.Success && slices.ContainsFunc(r.Logs, func(l string) bool { return strings.HasSuffix(l, "hello from cronfence") })
		})
	}
	// tick every 10s, hello every 30s: at most half a minute.
	deadline := time.Now().Add(45 * time.Second)
	for {
		tickAfterJoin := slices.ContainsFunc(slotsOf("tick"), func(s time.Time) bool { return s.After(joined) })
		if tickAfterJoin && len(slotsOf("minutely")) > 0 && helloRan() {
			break
		}
		for _, p := range []*proc{a, b} {
			select {
			case <-p.done:
				t.Fatalf("a replica exited with %d; stderr:\n%s", p.code, p.stderr.String())
			default:
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 45s: tick after the second replica joined %v, minutely ran %v, hello ran %v; output:\n%s\nstderr:\n%s\n---\n%s",
				tickAfterJoin, len(slotsOf("minutely")) > 0, helloRan(), strings.Join(slotLines(out), "\n"), a.stderr.String(), b.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopServe(t, a)
	stopServe(t, b)

	// No slot twice: not in the output file, not in the run rows.
	for _, job := range []string{"tick", "minutely"} {
		seen := map[time.Time]bool{}
		for _, s := range slotsOf(job) {
			if seen[s] {
				t.Errorf("%s slot %s ran twice; output:\n%s", job, s.Format(time.RFC3339), strings.Join(slotLines(out), "\n"))
			}
			seen[s] = true
		}
	}
	for _, job := range []string{"tick", "minutely", "hello"} {
		runs, err := st.RunList(ctx, store.RunListParams{Job: job, Limit: store.MaxRunListLimit})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[time.Time]bool{}
		for _, r := range runs {
			if r.Skipped || r.Manual {
				continue
			}
			if seen[r.Slot] {
				t.Errorf("%s slot %s has two run rows: %+v", job, r.Slot.Format(time.RFC3339), runs)
			}
			seen[r.Slot] = true
			if !r.Success {
				t.Errorf("%s run failed: %+v", job, r)
			}
		}
	}
}
