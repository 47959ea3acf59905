package command

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lines is what OnLine was given, in order.
type lines struct {
	mu  sync.Mutex
	got []string // "stdout: text"
	ch  chan string
}

func (l *lines) on(s Stream, line string) {
	l.mu.Lock()
	l.got = append(l.got, s.String()+": "+line)
	l.mu.Unlock()
	l.ch <- s.String() + ": " + line
}

// Each line reaches OnLine as the command writes it, not when it exits:
// the command here waits, after its first line, for a file the test
// creates only once it was given that line.
func TestOnLineGetsEachLineAsItIsWritten(t *testing.T) {
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) {
			dir := t.TempDir()
			goOn := filepath.Join(dir, "go-on")
			l := &lines{ch: make(chan string, 16)}
			done := make(chan Result, 1)
			go func() {
				done <- Run(context.Background(), Spec{
					Shell:      `echo first; while [ ! -e "` + goOn + `" ]; do sleep 0.01; done; echo second >&2; printf 'no newline'`,
					Supervisor: m.supervisor,
					OnLine:     l.on,
				})
			}()
			select {
			case got := <-l.ch:
				if got != "stdout: first" {
					t.Fatalf("first line = %q, want stdout's first", got)
				}
			case res := <-done:
				t.Fatalf("the command ended (%+v) before its first line was given", res)
			case <-time.After(time.Minute): // a bound on a hang, not a measurement
				t.Fatal("the first line was not given while the command ran")
			}
			if err := os.WriteFile(goOn, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			res := <-done
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			// In order within each stream; between the two, as read.
			var stdout, stderr []string
			l.mu.Lock()
			for _, line := range l.got {
				if text, ok := strings.CutPrefix(line, "stderr: "); ok {
					stderr = append(stderr, text)
				} else {
					stdout = append(stdout, strings.TrimPrefix(line, "stdout: "))
				}
			}
			l.mu.Unlock()
			if strings.Join(stdout, "|") != "first|no newline" || strings.Join(stderr, "|") != "second" {
				t.Fatalf("stdout %q, stderr %q; want first and the last line without its newline, and second", stdout, stderr)
			}
			if len(res.Output) != 3 || res.Output[0] != "first" {
				t.Fatalf("Output %q, want the three lines, first first", res.Output)
			}
		})
	}
}

// A line longer than MaxLine comes in pieces, none longer than MaxLine.
func TestOnLineCutsALongLine(t *testing.T) {
	l := &lines{ch: make(chan string, 16)}
	res := Run(context.Background(), Spec{
		Shell:  `head -c 40000 /dev/zero | tr '\0' x; echo; echo after`,
		OnLine: l.on,
	})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	total := 0
	for i, line := range l.got {
		text := strings.TrimPrefix(line, "stdout: ")
		if i < len(l.got)-1 {
			if len(text) > MaxLine || strings.Trim(text, "x") != "" {
				t.Fatalf("piece %d: %d bytes of %q…; want at most %d x's", i, len(text), text[:min(len(text), 10)], MaxLine)
			}
			total += len(text)
		}
	}
	if total != 40000 || l.got[len(l.got)-1] != "stdout: after" || len(l.got) != 4 {
		t.Fatalf("%d pieces holding %d x's, last %q; want 40000 x's in 3 pieces, then after", len(l.got)-1, total, l.got[len(l.got)-1])
	}
}
