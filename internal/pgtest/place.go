package pgtest

import (
	"net"
	"os"
	"path/filepath"
)

// freePort asks the kernel for a free port on 127.0.0.1. Another process may
// take it before the server binds; create retries when that happens.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

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
