// Package schemafile reads the embedded migration files of a store whose
// runner applies them in order (SQLite, MySQL): NNN_name.up.sql with its
// NNN_name.down.sql, versions 1, 2, 3 … without gaps. The down files are
// for operators rolling back by hand; the runners only go up.
package schemafile

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// File is one migration: its version, its file name without .up.sql
// (e.g. 001_init) and the text of its up file.
type File struct {
	Version int
	Base    string
	Up      string
}

// Parse reads the migrations in dir of fsys. Anything but contiguous
// versions from 1, each with an up and a down file, is an error naming the
// file: a build mistake a runner reports instead of half-applying.
func Parse(fsys fs.FS, dir string) ([]File, error) {
	ups, err := fs.Glob(fsys, dir+"/*.up.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(ups)
	var out []File
	for i, file := range ups {
		base := strings.TrimSuffix(path.Base(file), ".up.sql")
		num, name, ok := strings.Cut(base, "_")
		version, err := strconv.Atoi(num)
		if !ok || err != nil || name == "" {
			return nil, fmt.Errorf("migration %s: name must be NNN_name.up.sql", file)
		}
		if version != i+1 {
			return nil, fmt.Errorf("migration %s: want version %d, versions must be contiguous from 1", file, i+1)
		}
		if _, err := fs.Stat(fsys, path.Join(dir, base+".down.sql")); err != nil {
			return nil, fmt.Errorf("migration %s has no down file: %w", file, err)
		}
		up, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, err
		}
		out = append(out, File{Version: version, Base: base, Up: string(up)})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no migrations embedded")
	}
	return out, nil
}

// Tables returns the tables that the migrations up to version leave: each
// one created and not dropped by a later migration, as stmt finds them in
// the up files (its first group the verb, CREATE or DROP, its second the
// table's name).
func Tables(files []File, version int, stmt *regexp.Regexp) []string {
	var out []string
	for _, m := range files[:min(version, len(files))] {
		for _, st := range stmt.FindAllStringSubmatch(m.Up, -1) {
			out = slices.DeleteFunc(out, func(t string) bool { return t == st[2] })
			if strings.EqualFold(st[1], "CREATE") {
				out = append(out, st[2])
			}
		}
	}
	return out
}
