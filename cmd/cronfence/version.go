package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/alecthomas/kong"
)

// The binary's version, from the build information Go records in every
// binary: the module version for `go install …/cmd/cronfence@v1.2.3`, and
// for a build from a source tree "devel" with the commit it was built from
// (and "dirty" when the tree had uncommitted changes).

// versionCmd prints the version.
type versionCmd struct{}

func (versionCmd) Run(a *app) error {
	_, err := fmt.Fprintln(a.stdout, versionLine())
	return err
}

// versionFlag is --version: the same line as `cronfence version`, and exit 0.
type versionFlag bool

func (versionFlag) BeforeReset(app *kong.Kong) error {
	fmt.Fprintln(app.Stdout, versionLine())
	app.Exit(0)
	return nil
}

// versionLine is "cronfence VERSION (commit REV, TIME, GOVERSION)", with the
// parts the build info has.
func versionLine() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "cronfence unknown (no build information in this binary)"
	}
	return "cronfence " + describeBuild(bi)
}

// describeBuild is versionLine's text after "cronfence ".
func describeBuild(bi *debug.BuildInfo) string {
	version := bi.Main.Version
	if version == "" || version == "(devel)" {
		version = "devel"
	}
	var rev, when, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = ", dirty"
			}
		}
	}
	var parts []string
	if rev != "" {
		parts = append(parts, "commit "+rev+dirty)
	}
	if when != "" {
		parts = append(parts, when)
	}
	parts = append(parts, bi.GoVersion)
	return version + " (" + strings.Join(parts, ", ") + ")"
}
