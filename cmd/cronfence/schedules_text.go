package main

// How `cronfence schedules` prints schedules and their changes.

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin/client"
)

// printJSONLines prints each of vs as one JSON line.
func printJSONLines[T any](a *app, vs []T) error {
	enc := json.NewEncoder(a.stdout)
	for _, v := range vs {
		if err := enc.Encode(v); err != nil {
			return err
		}
	}
	return nil
}

// newTable returns a table writer with header written.
func newTable(w io.Writer, header string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	return tw
}

func zoneText(tz string) string {
	if tz == "" {
		return "UTC"
	}
	return tz
}

// truncateText cuts s to at most n runes, marking the cut.
func truncateText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// argsText is a schedule's arguments for a line: "-" for none.
func argsText(a json.RawMessage) string {
	if len(a) == 0 || string(a) == "null" {
		return "-"
	}
	return truncateText(oneLine(string(a)), 200)
}

// printSchedule prints one schedule, a field a line.
func printSchedule(a *app, sc client.Schedule) {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	for _, kv := range [][2]string{
		{"name", flat.Replace(sc.Name)},
		{"version", fmt.Sprint(sc.Version)},
		{"kind", flat.Replace(sc.Kind)},
		{"spec", flat.Replace(sc.Spec)},
		{"zone", zoneText(sc.TimeZone)},
		{"args", argsText(sc.Args)},
		{"enabled", enabledText(!sc.Disabled)},
		{"overlap", overlapText(sc.Overlap)},
		{"timeout", orText(sc.Timeout, "none")},
		{"lease ttl", orText(sc.LeaseTTL, defaultText(seconds(cronfence.DefaultLeaseTTL)))},
		{"catch-up", catchUpText(sc.ScheduleSettings)},
		{"jitter", orText(sc.Jitter, "none")},
		{"exclude", excludeText(sc.Exclude)},
		{"attempts", attemptsText(sc.MaxAttempts)},
		{"backoff", orText(sc.RetryBackoff, defaultText(seconds(cronfence.DefaultRetryBackoff)))},
		{"deadline", orText(sc.Deadline, "none")},
		{"created", short(sc.CreatedAt) + " by " + flat.Replace(sc.CreatedBy)},
		{"updated", short(sc.UpdatedAt) + " by " + flat.Replace(sc.UpdatedBy)},
	} {
		fmt.Fprintf(tw, "%s:\t%s\n", kv[0], kv[1])
	}
	_ = tw.Flush()
}

// changeText says what a change changed: the settings of a create, those
// that differ for an update.
func changeText(ch client.ScheduleChange) string {
	switch {
	case ch.Before == nil && ch.After != nil:
		return fmt.Sprintf("kind %s, spec %s %s, args %s", ch.After.Kind, ch.After.Spec, zoneText(ch.After.TimeZone), argsText(ch.After.Args))
	case ch.After == nil:
		return "deleted"
	}
	b, af := settingsFields(*ch.Before), settingsFields(*ch.After)
	var diffs []string
	for i := range b {
		if b[i][1] != af[i][1] {
			diffs = append(diffs, fmt.Sprintf("%s %s → %s", b[i][0], b[i][1], af[i][1]))
		}
	}
	if len(diffs) == 0 {
		return "no setting changed"
	}
	return strings.Join(diffs, ", ")
}

// settingsFields are a schedule's settings as (name, text) pairs, in a
// fixed order.
func settingsFields(s client.ScheduleSettings) [][2]string {
	return [][2]string{
		{"spec", s.Spec}, {"zone", zoneText(s.TimeZone)}, {"kind", s.Kind}, {"args", argsText(s.Args)},
		{"overlap", overlapText(s.Overlap)}, {"timeout", orText(s.Timeout, "none")},
		{"lease ttl", orText(s.LeaseTTL, defaultText(seconds(cronfence.DefaultLeaseTTL)))}, {"catch-up", catchUpText(s)}, {"jitter", orText(s.Jitter, "none")},
		{"exclude", excludeText(s.Exclude)},
		{"attempts", attemptsText(s.MaxAttempts)}, {"backoff", orText(s.RetryBackoff, defaultText(seconds(cronfence.DefaultRetryBackoff)))},
		{"deadline", orText(s.Deadline, "none")},
		{"enabled", enabledText(!s.Disabled)},
	}
}

// A stored schedule keeps a setting left out as its zero value, which
// means the job's default: these say what it means rather than "0s".

// excludeText is a schedule's exclusion windows, quoted, or "none".
func excludeText(entries []string) string {
	if len(entries) == 0 {
		return "none"
	}
	quoted := make([]string, len(entries))
	for i, e := range entries {
		quoted[i] = strconv.Quote(e)
	}
	return strings.Join(quoted, ", ")
}

// catchUpText says which missed slots run: "none", "latest within 6h0m0s"
// or "all within 6h0m0s, 100 slots back (default)".
func catchUpText(s client.ScheduleSettings) string {
	window := orText(s.CatchUpWindow, "")
	policy := s.CatchUp
	if policy == "" {
		policy = "latest"
		if window == "" {
			policy = "none"
		}
	}
	switch {
	case policy == "none":
		return "none"
	case policy == "all" && s.MaxCatchUp == 0:
		return fmt.Sprintf("all within %s, %d slots back (default)", window, cronfence.DefaultMaxCatchUp)
	case policy == "all":
		return fmt.Sprintf("all within %s, %d slots back", window, s.MaxCatchUp)
	}
	return "latest within " + window
}

// orText is d, or zero when d is a zero duration or empty.
func orText(d, zero string) string {
	if d == "" || d == "0s" {
		return zero
	}
	return d
}

// defaultText is a default's value, marked as the default.
func defaultText(v any) string { return fmt.Sprint(v) + " (default)" }

// seconds writes d in seconds, as the flags' help does ("90s", not "1m30s").
func seconds(d time.Duration) string { return fmt.Sprintf("%gs", d.Seconds()) }

func overlapText(o string) string { return orText(o, defaultText(cronfence.OverlapSkip)) }

func attemptsText(n int) string {
	if n == 0 {
		return defaultText(cronfence.DefaultMaxAttempts)
	}
	return fmt.Sprint(n)
}
