package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLockPassesCommandBytes: what follows lock's first -- reaches the
// command byte for byte, Latin-1 included (kong alone would hand it
// U+FFFD), a later -- included; before it, a name or a flag value that is
// not UTF-8 is still refused with exit 2 and nothing runs.
func TestLockPassesCommandBytes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := []string{"--sqlite", filepath.Join(dir, "cronfence.db")}
	out := filepath.Join(dir, "out")

	code, _, errOut := runCLI(t, dir, args(db, "lock", "x", "--", "/bin/sh", "-c", `printf %s "$1" > out`, "sh", "\xe9t\xe9")...)
	if b, err := os.ReadFile(out); code != 0 || err != nil || string(b) != "\xe9t\xe9" {
		t.Fatalf("lock with a Latin-1 argument: %d %q; the command wrote %q %v, want the bytes \\xe9t\\xe9", code, errOut, b, err)
	}

	// Only the first -- is lock's; the command gets any later one.
	code, _, errOut = runCLI(t, dir, args(db, "lock", "x", "--", "/bin/sh", "-c", `printf '%s|' "$@" > out`, "sh", "--", "\xff", "a,b", "-n")...)
	if b, _ := os.ReadFile(out); code != 0 || string(b) != "--|\xff|a,b|-n|" {
		t.Fatalf("lock with a -- among the command's arguments: %d %q; the command wrote %q", code, errOut, b)
	}

	ran := filepath.Join(dir, "ran")
	for _, tc := range []struct {
		what string
		args []string
	}{
		{"lease name", []string{"lock", "x\xe9", "--", "/bin/sh", "-c", "echo > ran"}},
		{"flag value", []string{"lock", "x", "--kill-grace", "\xe91s", "--", "/bin/sh", "-c", "echo > ran"}},
		{"global flag value", []string{"--schema", "s\xe9", "lock", "x", "--", "/bin/sh", "-c", "echo > ran"}},
		// Without a --, the command is not after lock's separator.
		{"command without --", []string{"lock", "x", "/bin/sh", "-c", "echo > ran", "sh", "\xe9"}},
	} {
		code, _, errOut := runCLI(t, dir, args(db, tc.args...)...)
		if code != exitUsage || !strings.Contains(errOut, "not valid UTF-8") {
			t.Errorf("lock with a %s that is not UTF-8: %d %q, want exit 2 saying so", tc.what, code, errOut)
		}
	}
	if _, err := os.Stat(ran); !os.IsNotExist(err) {
		t.Errorf("a refused lock ran its command: %v", err)
	}
	// Other commands have no raw arguments, after a -- or not.
	if code, _, errOut := runCLI(t, dir, args(db, "pause", "--", "\xe9")...); code != exitUsage || !strings.Contains(errOut, "not valid UTF-8") {
		t.Errorf("pause -- \\xe9: %d %q, want exit 2", code, errOut)
	}
}

// TestLockRawTail pins which arguments of a parsed lock are passed raw:
// kong's passthrough command is the tail of args, and of it only what
// follows the first --.
func TestLockRawTail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args, command []string
		want          int
	}{
		{[]string{"lock", "x", "--", "cmd", "a"}, []string{"--", "cmd", "a"}, 3},
		{[]string{"--sqlite", "f", "lock", "x", "--", "cmd"}, []string{"--", "cmd"}, 5},
		{[]string{"lock", "x", "cmd", "--", "a"}, []string{"cmd", "--", "a"}, 4},
		{[]string{"lock", "x", "cmd", "a"}, []string{"cmd", "a"}, 4},
		{[]string{"lock", "--", "x", "cmd", "a"}, []string{"cmd", "a"}, 3},
		{[]string{"lock", "x", "--"}, []string{"--"}, 3},
	} {
		if got := lockRawTail(tc.args, tc.command); got != tc.want {
			t.Errorf("lockRawTail(%q, %q) = %d, want %d", tc.args, tc.command, got, tc.want)
		}
	}
}
