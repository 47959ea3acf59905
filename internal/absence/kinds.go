package absence

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cronfence/cronfence/store"
)

// checkKinds raises kind_unknown for each handler kind that enabled stored
// schedules name and no live replica registers: none of them runs, and no
// other check would say so (a stored schedule is no replica's declared job,
// so its absence is nobody's deadline).
func checkKinds(reg *Registry, used map[string][]string) []Alert {
	known := map[string]bool{}
	for _, rep := range reg.Live {
		if !rep.Timers {
			continue // an API-only replica runs nothing
		}
		for _, k := range rep.Kinds {
			known[k] = true
		}
	}
	var out []Alert
	for kind, names := range used {
		if known[kind] {
			continue
		}
		names = slices.Clone(names)
		slices.Sort(names)
		out = append(out, Alert{
			Kind: store.AlertKindUnknown, Subject: kind,
			Message: fmt.Sprintf("no live replica registers the kind %q, so its stored schedules (%s) do not run: register it (RegisterKind, or kinds: in the config) on the replicas",
				kind, strings.Join(names, ", ")),
			Details: map[string]string{"kind": kind, "schedules": strings.Join(names, ","), "live_replicas": strconv.Itoa(len(reg.Live))},
		})
	}
	return out
}
