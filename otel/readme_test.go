package otel_test

import (
	"os"
	"strings"
	"testing"
)

// The README's "Traces" code is the body of newTracedScheduler
// (example_test.go), which ExampleNewObserver runs, line for line: a
// snippet that drifts from the code the tests run fails here.
func TestREADMETracesIsTheExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n### Traces\n")
	if !ok {
		t.Fatal(`README.md has no "### Traces" section`)
	}
	_, block, ok := strings.Cut(section, "```go\n")
	if !ok {
		t.Fatal(`README.md's "Traces" has no Go block`)
	}
	block, _, ok = strings.Cut(block, "```\n")
	if !ok {
		t.Fatal(`README.md's "Traces" Go block does not end`)
	}
	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(example), "(*cronfence.Scheduler, *sdktrace.TracerProvider, error) {\n")
	if !ok {
		t.Fatal("example_test.go has no newTracedScheduler")
	}
	body, _, _ = strings.Cut(body, "\n}\n")
	want := strings.Split(strings.TrimSuffix(block, "\n"), "\n")
	got := strings.Split(body, "\n")
	for i, line := range got {
		got[i] = strings.TrimPrefix(line, "\t")
	}
	for i := range max(len(want), len(got)) {
		if i >= len(want) || i >= len(got) || want[i] != got[i] {
			t.Fatalf("README.md's snippet and newTracedScheduler differ first at line %d:\nREADME:  %q\nexample: %q",
				i+1, line(want, i), line(got, i))
		}
	}
}

func line(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(the end)"
}
