package main

import (
	"debug/elf"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `make build` (the README's way to build the binary, and the Dockerfile's
// input) gives a static executable: no program interpreter, no shared
// libraries, so it runs FROM scratch. It carries no symbol or DWARF tables
// (a third of an unstripped binary, of no use to a host that runs it), it
// stamps the version, and it runs.
func TestMakeBuildIsStatic(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary from scratch without cgo")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	dir := t.TempDir()
	cmd := exec.Command("make", "-s", "build", "BINDIR="+dir)
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	bin := filepath.Join(dir, "cronfence")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s has a %s program header: it is dynamically linked", bin, p.Type)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) != 0 {
		t.Errorf("%s imports shared libraries %v (%v)", bin, libs, err)
	}
	for _, sec := range f.Sections {
		if sec.Name == ".symtab" || strings.HasPrefix(sec.Name, ".debug_") || strings.HasPrefix(sec.Name, ".zdebug_") {
			t.Errorf("%s keeps its %s section: build it stripped (-ldflags=\"-s -w\")", bin, sec.Name)
		}
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "cronfence ") {
		t.Fatalf("%s version: %v, %q", bin, err, out)
	}
}
