package adminview

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/store"
)

// ScheduleOf is the API view of a stored schedule.
func ScheduleOf(sc store.Schedule) client.Schedule {
	return client.Schedule{
		Name: sc.Name, ID: sc.ID, Version: sc.Version, ScheduleSettings: SettingsOf(sc.ScheduleSettings),
		CreatedAt: Time(sc.CreatedAt), CreatedBy: sc.CreatedBy, UpdatedAt: Time(sc.UpdatedAt), UpdatedBy: sc.UpdatedBy,
	}
}

// SettingsOf is the API view of a stored schedule's settings: every
// duration written out ("0s" for none), args null when there are none.
func SettingsOf(s store.ScheduleSettings) client.ScheduleSettings {
	v := client.ScheduleSettings{
		Spec: s.Spec, TimeZone: s.TimeZone, Kind: s.Kind, Overlap: s.Overlap,
		CatchUpWindow: s.CatchUpWindow.String(), LeaseTTL: s.LeaseTTL.String(), Timeout: s.Timeout.String(),
		Deadline: s.Deadline.String(), MaxAttempts: s.MaxAttempts, RetryBackoff: s.RetryBackoff.String(), Disabled: s.Disabled,
		CatchUp: s.CatchUp, MaxCatchUp: s.MaxCatchUp, Jitter: s.Jitter.String(), Exclude: s.Exclude,
	}
	if len(s.Args) > 0 {
		v.Args = append([]byte(nil), s.Args...)
	}
	return v
}

// ChangeOf is the API view of an entry of the schedules' change log.
func ChangeOf(ch store.ScheduleChange) client.ScheduleChange {
	v := client.ScheduleChange{
		Seq: ch.Seq, Action: string(ch.Action), Name: ch.Name, ScheduleID: ch.ScheduleID,
		Version: ch.Version, By: ch.By, At: Time(ch.At),
	}
	if ch.Before != nil {
		b := SettingsOf(*ch.Before)
		v.Before = &b
	}
	if ch.After != nil {
		a := SettingsOf(*ch.After)
		v.After = &a
	}
	return v
}

// Settings reads a schedule's settings as the API takes them: durations
// as Go duration strings ("" for the default), args as any JSON value
// (null for none). A bad value is an error wrapping
// store.ErrInvalidArgument that names the field as the JSON spells it;
// the rest is checked where the schedule is written (Schedules.Create).
func Settings(v client.ScheduleSettings) (store.ScheduleSettings, error) {
	s := store.ScheduleSettings{
		Spec: v.Spec, TimeZone: v.TimeZone, Kind: v.Kind, Overlap: v.Overlap,
		MaxAttempts: v.MaxAttempts, Disabled: v.Disabled, CatchUp: v.CatchUp, MaxCatchUp: v.MaxCatchUp,
	}
	if len(v.Exclude) > 0 {
		s.Exclude = append([]string(nil), v.Exclude...)
	}
	if a := bytes.TrimSpace(v.Args); len(a) > 0 && !bytes.Equal(a, []byte("null")) {
		s.Args = append([]byte(nil), a...)
	}
	var errs []string
	for _, d := range []struct {
		field string
		text  string
		to    *time.Duration
	}{
		{"catchUpWindow", v.CatchUpWindow, &s.CatchUpWindow},
		{"leaseTTL", v.LeaseTTL, &s.LeaseTTL},
		{"timeout", v.Timeout, &s.Timeout},
		{"deadline", v.Deadline, &s.Deadline},
		{"retryBackoff", v.RetryBackoff, &s.RetryBackoff},
		{"jitter", v.Jitter, &s.Jitter},
	} {
		if d.text == "" {
			continue
		}
		x, err := time.ParseDuration(d.text)
		switch {
		case err != nil:
			errs = append(errs, fmt.Sprintf("%s: %q is not a duration; write e.g. \"90s\" or \"1h30m\"", d.field, d.text))
		case x < 0:
			errs = append(errs, fmt.Sprintf("%s: %q must not be negative", d.field, d.text))
		default:
			*d.to = x
		}
	}
	if v.MaxAttempts < 0 {
		errs = append(errs, fmt.Sprintf("maxAttempts: %d must not be negative (0 for the default)", v.MaxAttempts))
	}
	if len(errs) > 0 {
		return store.ScheduleSettings{}, fmt.Errorf("%s: %w", strings.Join(errs, "; "), store.ErrInvalidArgument)
	}
	return s, nil
}
