package command

import (
	"fmt"
	"os"
	"slices"
	"testing"
)

func TestDescendants(t *testing.T) {
	t.Parallel()
	// 1 ─┬─ 10 ─┬─ 11 (zombie) ── 12
	//    │      └─ 13
	//    └─ 20 ── 21
	procs := []procEntry{
		{pid: 10, ppid: 1}, {pid: 11, ppid: 10, zombie: true}, {pid: 12, ppid: 11},
		{pid: 13, ppid: 10}, {pid: 20, ppid: 1}, {pid: 21, ppid: 20},
	}
	tests := []struct {
		root int
		want []int
	}{
		{10, []int{12, 13}}, // the zombie is left out, its child is not
		{20, []int{21}},
		{12, nil},
		{1, []int{10, 12, 13, 20, 21}},
	}
	for _, tt := range tests {
		got := descendants(procs, tt.root)
		slices.Sort(got)
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("descendants of %d = %v, want %v", tt.root, got, tt.want)
		}
	}
	if got := zombieChildren(procs, 10); fmt.Sprint(got) != "[11]" {
		t.Errorf("zombieChildren of 10 = %v, want [11]", got)
	}
}

// TestReadProcs: this process and its parent are in the list, linked.
func TestReadProcs(t *testing.T) {
	t.Parallel()
	procs := readProcs()
	i := slices.IndexFunc(procs, func(p procEntry) bool { return p.pid == os.Getpid() })
	if i < 0 || procs[i].ppid != os.Getppid() || procs[i].zombie {
		t.Fatalf("this process (%d, parent %d) not found as such in %d entries", os.Getpid(), os.Getppid(), len(procs))
	}
}
