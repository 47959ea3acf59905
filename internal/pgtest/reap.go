package pgtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ownerFile in a cluster directory names the host and process that created
// it. A test binary killed by go test's -timeout never runs its cleanup, so
// the next cluster created on this machine stops and removes the servers
// whose creator is gone instead of letting them pile up.
const ownerFile = "owner"

func writeOwner(dir string) error {
	host, _ := os.Hostname()
	return os.WriteFile(filepath.Join(dir, ownerFile), fmt.Appendf(nil, "%s %d\n", host, os.Getpid()), 0o644)
}

// reapStale removes cluster directories under base whose creating process no
// longer exists. It is best effort: a directory it cannot judge or remove is
// left alone. Only directories created on this host are judged, since a
// process id means nothing on another one (a container sharing /tmp).
func reapStale(bin, base string, user *osUser) {
	dirs, _ := filepath.Glob(filepath.Join(base, clusterPrefix+"*"))
	host, _ := os.Hostname()
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // not ours, or still being created
		}
		fields := strings.Fields(string(b))
		if len(fields) != 2 || fields[0] != host {
			continue
		}
		pid, err := strconv.Atoi(fields[1])
		if err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		c := &Cluster{bin: bin, dir: dir, user: user}
		_ = c.destroy()
	}
}
