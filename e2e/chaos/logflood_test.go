package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// maxLogLines bounds what one serve incarnation may write to stderr in a
// run. A healthy replica logs a few lines per fault and per failed run
// (hundreds over a soak); tens of thousands mean a loop spinning without
// sleeping, which also starves the other replicas of CPU.
const maxLogLines = 5000

// checkLogFlood reports every incarnation whose stderr has more than
// maxLogLines lines, with its most repeated message.
func checkLogFlood(dir string, r *report) error {
	files, err := filepath.Glob(filepath.Join(dir, "r*.stderr"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		counts := map[string]int{}
		lines := 0
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			lines++
			var line struct{ Msg string }
			if json.Unmarshal(sc.Bytes(), &line) == nil {
				counts[line.Msg]++
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if lines <= maxLogLines {
			continue
		}
		top, n := "", 0
		for msg, c := range counts {
			if c > n {
				top, n = msg, c
			}
		}
		r.violate("log flood: %s wrote %d lines (more than %d), %d of them %q: a loop that does not sleep",
			filepath.Base(path), lines, maxLogLines, n, top)
	}
	return nil
}
