package cronfence

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of /proc/PID/stat's CPU times (USER_HZ, 100 on
// every Linux this runs on).
const clockTick = 10 * time.Millisecond

// procStat is what the replica benchmark reads of one /proc/PID/stat line.
type procStat struct {
	ppid int
	// cpu is the process's own user and system time, and that of its
	// children it has waited for (PostgreSQL's backends, once they exit).
	cpu time.Duration
}

func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from after its closing parenthesis (field 3, the state, is f[0]).
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: ppid %q", pid, f[1])
	}
	var ticks int64
	for _, v := range f[11:15] { // utime, stime, cutime, cstime
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return procStat{}, fmt.Errorf("/proc/%d/stat: %q", pid, v)
		}
		ticks += n
	}
	return procStat{ppid: ppid, cpu: time.Duration(ticks) * clockTick}, nil
}

// treeCPU is the CPU time pid and its children (live, or exited and
// waited for) have used: for a PostgreSQL postmaster, the whole server's.
func treeCPU(pid int) (time.Duration, error) {
	root, err := readProcStat(pid)
	if err != nil {
		return 0, err
	}
	total := root.cpu
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil || child == pid {
			continue
		}
		st, err := readProcStat(child)
		if err != nil || st.ppid != pid {
			continue // gone meanwhile, or not a child
		}
		total += st.cpu
	}
	return total, nil
}

// postmasterPID reads the server's PID from its data directory's
// postmaster.pid (first line).
func postmasterPID(dataDir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strconv.Atoi(strings.TrimSpace(line))
}
