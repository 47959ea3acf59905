package pgtest

import (
	"os"
	"path/filepath"
)

// tempBase returns where cluster directories go. A server running as another
// user must be able to reach its directory, so when the usual temp directory
// sits under one only we can enter, /tmp is used instead.
func tempBase(otherUser bool) string {
	base := os.TempDir()
	if otherUser && !reachableByAll(base) {
		return "/tmp"
	}
	return base
}

// reachableByAll reports whether every directory from / down to dir may be
// entered by any user.
func reachableByAll(dir string) bool {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for {
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return true
		}
		dir = parent
	}
}
