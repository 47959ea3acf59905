package absence

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"

	"github.com/cronfence/cronfence/store"
)

// material names, per kind, the details whose change makes an open alert
// another problem for an operator who acknowledged it: a new holder or
// generation of a stuck lease, another reason for skips, a writer other
// than the deposed one waited for. What moves while the problem stays the
// same (how long, how many, which slot is the latest) is left out, so an
// acknowledged alert stays silent while it only grows. A kind absent from
// this map, config_drift and clock_offset aside (Fingerprint reads theirs
// from their values), is one these checks do not know (a newer binary's):
// every detail counts.
var material = map[store.AlertKind][]string{
	store.AlertDeadlineMissed: nil,
	store.AlertFailing:        nil,
	store.AlertSlowRun:        nil,
	store.AlertOrphanJob:      nil,
	store.AlertKindUnknown:    nil,
	store.AlertLeaseStuck:     {"owner", "generation", "reason"},
	store.AlertSkipStreak:     {"reason"},
	store.AlertDeposedWriter:  {"writer", "generation"},
}

// Fingerprint is what an alert of kind with details reports, without its
// measures (store.AlertRaiseParams.Fingerprint): a change of it ends an
// operator's acknowledgement of the alert. Empty when nothing about the
// alert is material but its being open: then only its resolution ends the
// acknowledgement.
//
//   - config_drift: the distinct settings the live replicas register (each
//     replica's hash and schedule), whoever registers them: a replica
//     restarted with the same settings is no change, a third version is.
//   - clock_offset: whether the clock is ahead or behind.
//   - deadline_missed, failing, slow_run, orphan_job: nothing.
//   - the others: the details material names.
func Fingerprint(kind store.AlertKind, details map[string]string) string {
	var facts []string
	keys, known := material[kind]
	switch {
	case kind == store.AlertConfigDrift:
		for k, v := range details {
			if k != "differences" && !slices.Contains(facts, v) {
				facts = append(facts, v)
			}
		}
		slices.Sort(facts)
	case kind == store.AlertClockOffset:
		switch off, ok := details["offset"]; {
		case !ok:
		case strings.HasPrefix(off, "-"):
			facts = append(facts, "behind")
		default:
			facts = append(facts, "ahead")
		}
	case known:
		for _, k := range keys {
			if v, ok := details[k]; ok {
				facts = append(facts, k+"="+v)
			}
		}
	default:
		for _, k := range slices.Sorted(maps.Keys(details)) {
			facts = append(facts, k+"="+details[k])
		}
	}
	if len(facts) == 0 {
		return ""
	}
	sum := sha256.Sum256([]byte(string(kind) + "\x00" + strings.Join(facts, "\x00")))
	return hex.EncodeToString(sum[:16])
}
