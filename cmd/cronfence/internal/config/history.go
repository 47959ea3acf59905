package config

import (
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"
)

// Defaults of the history: section. They equal the cronfence package's
// (TestHistoryDefaultsMatchCronfence holds them to it), so a file without
// history: prunes as a zero cronfence.Config does.
const (
	// DefaultRetention equals cronfence.DefaultRetention (7 days).
	DefaultRetention = 7 * 24 * time.Hour
	// DefaultPruneEvery equals cronfence.DefaultPruneEvery.
	DefaultPruneEvery = time.Hour
	// MinPruneEvery is the shortest prune_every: the scheduler's loop, which
	// starts the prune passes, wakes about once a second
	// (cronfence.DefaultMaxSleep), so a shorter period would not be kept.
	MinPruneEvery = time.Second
)

// historyKeys are the fields of history:.
var historyKeys = []string{"retention", "prune_every"}

// History is the history: section: how long the database keeps the
// scheduler's history. Its fields have the meanings of cronfence.Config's
// Retention and PruneEvery, and always hold a value: the defaults when the
// file does not set them.
type History struct {
	// Retention: slots (claims) and runs older than this are deleted, each
	// job's latest slot and latest run excepted, and so are alerts resolved
	// longer ago and the registry rows of replicas without a heartbeat for
	// this long. Off keeps everything (no pruning). DefaultRetention (7
	// days) when not given; longer than every job's timeout and deadline
	// and than monitor.replica_stale.
	Retention time.Duration
	// PruneEvery is how often one replica (under the lease
	// "cronfence:retention") prunes. DefaultPruneEvery (1h) when not given;
	// at least MinPruneEvery.
	PruneEvery time.Duration
	// Line is the line of the history: key, 0 when the file sets none.
	Line int
}

// defaultHistory is the section when the file leaves it out.
func defaultHistory() History {
	return History{Retention: DefaultRetention, PruneEvery: DefaultPruneEvery}
}

// history decodes the section whose key is k and value n.
func (d *decoder) history(k, n *yaml.Node) History {
	h := defaultHistory()
	h.Line = k.Line
	var retention, prune opt[time.Duration]
	d.mapping(n, "history", historyKeys, func(key string, _, v *yaml.Node) {
		path := "history." + key
		switch key {
		case "retention":
			x, ok := d.retention(v, path)
			retention = set(x, ok, v, path)
		case "prune_every":
			x, ok := d.pruneEvery(v, path)
			prune = set(x, ok, v, path)
		}
	})
	if retention.set {
		h.Retention = retention.v
	}
	if prune.set {
		h.PruneEvery = prune.v
	}
	// As check_every with the heartbeat off: a period for a pass that never
	// runs is a contradiction, most likely a half-finished edit.
	if retention.set && retention.v < 0 && prune.set {
		d.errorf(prune.line, prune.path, "has no effect: retention is off (line %d), so nothing is pruned; leave prune_every out", retention.line)
	}
	d.retentionAt = retention
	return h
}

// retention decodes history.retention: a positive duration, or off (see
// durationOrOff). Durations have no day unit, and retentions are counted
// in days: the example says how to write them.
func (d *decoder) retention(n *yaml.Node, path string) (time.Duration, bool) {
	v, _, ok := d.durationOrOff(n, path, `"720h" for 30 days`, "keep all history", DefaultRetention)
	return v, ok
}

// pruneEvery decodes history.prune_every: a duration of at least
// MinPruneEvery. It cannot be off: retention: off is what stops pruning, and
// cronfence.Config refuses a negative PruneEvery.
func (d *decoder) pruneEvery(n *yaml.Node, path string) (time.Duration, bool) {
	if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") {
		return d.duration(n, path) // reports the bare number
	}
	s, ok := d.str(n, path)
	if !ok {
		return 0, false
	}
	v, err := time.ParseDuration(s)
	switch {
	case s == "off":
		d.errorf(n.Line, path, "cannot be off; write retention: off to stop pruning")
	case err != nil:
		d.errorf(n.Line, path, "%q is not a duration; write e.g. \"90s\" or \"1h30m\"", truncate(s))
	case v < 0:
		d.errorf(n.Line, path, "%q must not be negative", s)
	case v == 0:
		d.errorf(n.Line, path, "must not be zero; leave it out for %s", DefaultPruneEvery)
	case v < MinPruneEvery:
		d.errorf(n.Line, path, "%q must be at least %s: the scheduler looks for work about once a second", s, MinPruneEvery)
	default:
		return v, true
	}
	return 0, false
}

// bound is a duration the retention must exceed, and where it comes from.
type bound struct {
	v    time.Duration
	name string // the field it is, e.g. "jobs[2].deadline" or "defaults.timeout"
	path string // the field that sets it, for an Error's Path: name, unless derived
	line int    // path's line; 0 for a default
	// derived: it is ReplicaStaleHeartbeats times heartbeat_every, at path.
	derived bool
	why     string // what a retention no longer than it breaks
}

// Why the retention must exceed each bound: Store.Prune deletes slots and runs
// older than the retention unless they are their job's latest, and replica
// rows whose last heartbeat is older.
const (
	whyTimeout  = "a run may last its timeout, and pruning would delete the slot it is running once a newer one exists"
	whyDeadline = "the deadline check reads a slot once its deadline has passed, and would find it pruned " +
		"and raise deadline_missed for a slot that ran"
	whyReplicaStale = "pruning would delete the registry rows of replicas still counted live"
	whyCatchUpAll   = "catch-up (all) runs every slot of its window that has no claim, and would run again a slot whose claim was pruned"
)

// boundJob records a job's timeout and deadline, and its catch-up window
// when its policy (as resolved) is all, as resolved, for
// checkRetention.
func (d *decoder) boundJob(f fields, catchUp string) {
	bounds := []struct {
		o   opt[time.Duration]
		why string
	}{{f.timeout, whyTimeout}, {f.deadline, whyDeadline}}
	if catchUp == "all" {
		bounds = append(bounds, struct {
			o   opt[time.Duration]
			why string
		}{f.catchUpWindow, whyCatchUpAll})
	}
	for _, b := range bounds {
		if b.o.set && b.o.v > 0 {
			d.bounds = append(d.bounds, bound{v: b.o.v, name: b.o.path, path: b.o.path, line: b.o.line, why: b.why})
		}
	}
}

// boundReplicaStale records monitor.replica_stale, as resolved, for
// checkRetention; stale and heartbeat are the fields as written.
func (d *decoder) boundReplicaStale(m Monitor, stale, heartbeat opt[time.Duration]) {
	b := bound{v: m.ReplicaStale, name: "monitor.replica_stale", path: "monitor.replica_stale", why: whyReplicaStale}
	switch {
	case stale.set:
		b.line = stale.line
	case heartbeat.set && heartbeat.v > 0:
		b.path, b.line, b.derived = heartbeat.path, heartbeat.line, true
	}
	d.bounds = append(d.bounds, b)
}

// checkRetention reports a retention (given or the default) no longer than
// the longest bound: one problem, at the field to change.
func (d *decoder) checkRetention(h History) {
	// A retention written but not valid is reported already; the default
	// standing in for it is not what the file asks for.
	if h.Retention < 0 || d.reported("history.retention") {
		return
	}
	var worst *bound
	for i, b := range d.bounds {
		if b.v >= h.Retention && (worst == nil || b.v > worst.v) {
			worst = &d.bounds[i]
		}
	}
	if worst == nil {
		return
	}
	b := *worst
	if r := d.retentionAt; r.set {
		var where string
		switch {
		case b.derived:
			where = fmt.Sprintf("%d × heartbeat_every, line %d", ReplicaStaleHeartbeats, b.line)
		case b.line > 0:
			where = fmt.Sprintf("line %d", b.line)
		default:
			where = "the default"
		}
		d.errorf(r.line, r.path, "%s must be longer than %s (%s, %s): %s", h.Retention, b.name, b.v, where, b.why)
		return
	}
	const fix = "shorten it, or set history.retention longer"
	if b.derived {
		d.errorf(b.line, b.path, "makes %s %s (%d × heartbeat_every), not shorter than the history retention (%s by default): %s; %s",
			b.name, b.v, ReplicaStaleHeartbeats, h.Retention, b.why, fix)
		return
	}
	d.errorf(b.line, b.path, "%s is not shorter than the history retention (%s by default): %s; %s", b.v, h.Retention, b.why, fix)
}
