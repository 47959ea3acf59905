package pgtest

import (
	"errors"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// findBinDir returns the directory holding initdb and pg_ctl: the newest
// Debian-style /usr/lib/postgresql/N/bin, else wherever initdb is on PATH.
// Debian keeps the server binaries out of PATH, hence the first look.
func findBinDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(dirs, func(i, j int) bool { return majorOf(dirs[i]) > majorOf(dirs[j]) })
	for _, initdb := range dirs {
		dir := filepath.Dir(initdb)
		if executable(initdb) && executable(filepath.Join(dir, "pg_ctl")) {
			return dir, nil
		}
	}
	if initdb, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(initdb)
		if executable(filepath.Join(dir, "pg_ctl")) {
			return dir, nil
		}
	}
	return "", errors.New("no initdb in /usr/lib/postgresql/*/bin or on PATH")
}

// majorOf reads N from /usr/lib/postgresql/N/bin/initdb, so that 16 sorts
// after 9.6.
func majorOf(initdb string) float64 {
	v := filepath.Base(filepath.Dir(filepath.Dir(initdb)))
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return -1
	}
	return f
}

func executable(path string) bool {
	_, err := exec.LookPath(path)
	return err == nil
}
