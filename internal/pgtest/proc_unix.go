//go:build unix

package pgtest

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// osUser is who the server runs as; nil means ourselves.
type osUser = syscall.Credential

// serverUser returns the credential the server must run under: nil to run as
// ourselves, or the "postgres" user when we are root, since initdb and the
// server refuse to run as root.
func serverUser() (*osUser, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and PostgreSQL refuses to: need a \"postgres\" OS user to run the server as (the postgresql package creates it): %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user postgres: uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user postgres: gid %q: %w", u.Gid, err)
	}
	// An empty Groups drops root's supplementary groups in the child.
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// sysProcAttr runs a child under cred (nil: as ourselves).
func sysProcAttr(cred *osUser) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}

// chown hands path to cred's user; a no-op when cred is nil.
func chown(path string, cred *osUser) error {
	if cred == nil {
		return nil
	}
	return os.Chown(path, int(cred.Uid), int(cred.Gid))
}

// processAlive reports whether pid exists. EPERM means it exists but belongs
// to someone else.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
