package main

// How the admin commands print the API's values in tables and sentences.

import (
	"fmt"
	"time"

	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/store"
)

// short formats an RFC 3339 string for a table, "-" when nil.
func short(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		return *s
	}
	return t.UTC().Format("2006-01-02T15:04:05Z")
}

// resultText is a run's outcome for a table.
func resultText(r client.Run) string {
	switch {
	case r.Result.Skipped:
		return "skipped: " + r.Result.Reason
	case r.FinishedAt == nil && r.Error == nil && !r.Success:
		return "running"
	case r.Success:
		return "ok"
	case r.Result.Reason == store.ReasonInterrupted && r.Error != nil:
		return *r.Error // "interrupted on attempt 1 of 3: …", found dead by a replica
	case r.Error != nil:
		return "FAILED: " + *r.Error
	default:
		return "FAILED"
	}
}

func enabledText(b bool) string {
	if b {
		return "enabled"
	}
	return "disabled"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func noteText(n string) string {
	if n == "" {
		return ""
	}
	return fmt.Sprintf(" (note: %q)", n)
}

func overrideText(e *bool) string {
	switch {
	case e == nil:
		return "none (follows the config)"
	case *e:
		return "enabled"
	default:
		return "paused"
	}
}
