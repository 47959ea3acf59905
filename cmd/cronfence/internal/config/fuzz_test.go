package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzParse: Parse never panics, answers quickly, and either returns a file
// or only *Error problems.
func FuzzParse(f *testing.F) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "examples", "cronfence.yaml"))
	if err != nil {
		f.Fatalf("the example file seeds the corpus: %v", err)
	}
	f.Add(data)
	for _, s := range []string{
		"", "jobs: []", "jobs:\n  - name: a\n    schedule: '* * * * *'\n    shell: x\n",
		"defaults: {timeout: 1m, env: {A: '${N:-x}'}}\njobs: [{name: a, schedule: '@every 1s', command: [a, 1]}]",
		"tokens: [{name: a, role: admin, token: t}]", "a: &x [*x]", "jobs: [{<<: {}}]", "database: ${",
		"monitor: {heartbeat_every: 1s, check_every: off, skip_streak: 4, clock_offset: 1s, replica_stale: 3s, orphan_window: 1h}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<14 {
			return
		}
		// A hung parse never returns to be timed: crash the worker, naming
		// the input, instead.
		watchdog := time.AfterFunc(5*time.Second, func() { panic(fmt.Sprintf("parse of %q takes over 5s", data)) })
		file, err := parse(data, "f.yaml", lookup, Everything)
		watchdog.Stop()
		if err == nil {
			if file == nil {
				t.Fatal("nil file without error")
			}
			if m := file.Monitor; (m.HeartbeatEvery > 0 && m.HeartbeatEvery < MinMonitorEvery) || (m.CheckEvery > 0 && m.CheckEvery < MinMonitorEvery) ||
				m.HeartbeatEvery == 0 || m.CheckEvery == 0 || m.SkipStreak < 1 || m.ClockOffset <= 0 || m.ReplicaStale <= 0 || m.OrphanWindow <= 0 {
				t.Fatalf("invalid monitor: accepted: %+v", m)
			}
			for _, j := range file.Jobs {
				if j.Name == "" || j.Schedule == "" || (j.Shell == "") == (j.Command == nil) || j.MaxAttempts < 1 {
					t.Fatalf("invalid job accepted: %+v", j)
				}
			}
			return
		}
		if file != nil {
			t.Fatal("file with error")
		}
		var e interface{ Unwrap() []error }
		if !errors.As(err, &e) {
			t.Fatalf("error %v is not joined", err)
		}
		for _, x := range e.Unwrap() {
			var ce *Error
			if !errors.As(x, &ce) {
				t.Fatalf("%T %v is not a *Error", x, x)
			}
		}
	})
}
