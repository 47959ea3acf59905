package command

import (
	"os"
	"strconv"
	"strings"
)

// procEntry is what the supervisor needs of one /proc/PID/stat line.
type procEntry struct {
	pid, ppid int
	zombie    bool
}

// readProcs lists every process of the system from /proc. A process that
// exits while the directory is read is left out.
func readProcs() []procEntry {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	procs := make([]procEntry, 0, len(names))
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue
		}
		// "pid (comm) state ppid ...": comm may hold spaces and parentheses,
		// so the fields start after the last ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		ppid, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		procs = append(procs, procEntry{pid: pid, ppid: ppid, zombie: f[0] == "Z"})
	}
	return procs
}

// descendants returns every live process below root in procs: its
// children, their children and so on. Zombies are left out (they are dead;
// their parent reaps them) but their children are not.
func descendants(procs []procEntry, root int) []int {
	children := make(map[int][]procEntry, len(procs))
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p)
	}
	var out []int
	queue := []int{root}
	seen := map[int]bool{root: true}
	for len(queue) > 0 {
		parent := queue[0]
		queue = queue[1:]
		for _, c := range children[parent] {
			if seen[c.pid] {
				continue // a pid reused while /proc was read
			}
			seen[c.pid] = true
			if !c.zombie {
				out = append(out, c.pid)
			}
			queue = append(queue, c.pid)
		}
	}
	return out
}

// zombieChildren returns the children of parent in procs that have exited
// and wait to be reaped.
func zombieChildren(procs []procEntry, parent int) []int {
	var out []int
	for _, p := range procs {
		if p.ppid == parent && p.zombie {
			out = append(out, p.pid)
		}
	}
	return out
}
