package config

import (
	"errors"
	"fmt"
	"sort"
)

// Error is one problem in a config file. Load and Parse return them joined
// with errors.Join; retrieve them with errors.As or by unwrapping.
type Error struct {
	File string // the file as named to Load or Parse
	Line int    // 1-based; 0 when the problem has no line
	Path string // the field, e.g. "jobs[1].timeout"; "" for the file as a whole
	Msg  string
}

func (e *Error) Error() string {
	s := e.File
	if e.Line > 0 {
		s += fmt.Sprintf(":%d", e.Line)
	}
	if e.Path != "" {
		s += ": " + e.Path
	}
	return s + ": " + e.Msg
}

// err returns the collected errors in line order, joined, or nil.
func (d *decoder) err() error {
	if len(d.errs) == 0 {
		return nil
	}
	sort.SliceStable(d.errs, func(i, j int) bool { return d.errs[i].Line < d.errs[j].Line })
	errs := make([]error, 0, len(d.errs))
	seen := make(map[string]bool, len(d.errs))
	for _, e := range d.errs {
		if s := e.Error(); !seen[s] {
			seen[s] = true
			errs = append(errs, e)
		}
	}
	return errors.Join(errs...)
}

func (d *decoder) errorf(line int, path, format string, args ...any) {
	if len(d.errs) >= maxErrors {
		return
	}
	d.errs = append(d.errs, &Error{File: d.name, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// maxErrors bounds how many problems one load reports.
const maxErrors = 200
