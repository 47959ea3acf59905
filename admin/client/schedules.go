package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// Paths of the stored schedules' endpoints.
const (
	// SchedulesPath lists (GET) and creates (POST) stored schedules.
	SchedulesPath = Prefix + "/schedules"
	// SchedulesAuditPath lists every stored schedule's changes.
	SchedulesAuditPath = Prefix + "/schedules-audit"
)

// The ?limit= of the schedules and audit endpoints.
const (
	DefaultSchedulesLimit = 100
	MaxSchedulesLimit     = 1000
)

// SchedulePath is the path of one stored schedule, its name escaped: GET,
// PUT and DELETE it; /audit follows it.
func SchedulePath(name string) string { return SchedulesPath + "/" + url.PathEscape(name) }

// Schedules returns a page of stored schedules in name order: those after
// the name after ("" for the first page), at most limit (0: the server's
// default). The page's Next is the after of the next page.
func (c *Client) Schedules(ctx context.Context, after string, limit int) (SchedulePage, error) {
	q := url.Values{}
	if after != "" {
		q.Set("after", after)
	}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var page SchedulePage
	err := c.Do(ctx, http.MethodGet, withQuery(SchedulesPath, q), nil, &page)
	return page, err
}

// Schedule returns the stored schedule name; a 404 SCHEDULE_NOT_FOUND
// when there is none.
func (c *Client) Schedule(ctx context.Context, name string) (Schedule, error) {
	var sc Schedule
	err := c.Do(ctx, http.MethodGet, SchedulePath(name), nil, &sc)
	return sc, err
}

// CreateSchedule stores a new schedule at version 1; a 409
// SCHEDULE_CONFLICT when the name is taken.
func (c *Client) CreateSchedule(ctx context.Context, name string, set ScheduleSettings) (Schedule, error) {
	var sc Schedule
	err := c.Do(ctx, http.MethodPost, SchedulesPath, ScheduleCreate{Name: name, ScheduleSettings: set}, &sc)
	return sc, err
}

// UpdateSchedule replaces the settings of the schedule name if its
// version is still version; a 409 SCHEDULE_CONFLICT, whose details are
// a ScheduleConflict, when it is not.
func (c *Client) UpdateSchedule(ctx context.Context, name string, version int64, set ScheduleSettings) (Schedule, error) {
	var sc Schedule
	err := c.Do(ctx, http.MethodPut, SchedulePath(name), ScheduleUpdate{Version: version, ScheduleSettings: set}, &sc)
	return sc, err
}

// DeleteSchedule deletes the schedule name if its version is still
// version (any version when 0), and returns it as it was.
func (c *Client) DeleteSchedule(ctx context.Context, name string, version int64) (Schedule, error) {
	q := url.Values{}
	if version != 0 {
		q.Set("version", strconv.FormatInt(version, 10))
	}
	var sc Schedule
	err := c.Do(ctx, http.MethodDelete, withQuery(SchedulePath(name), q), nil, &sc)
	return sc, err
}

// ScheduleAudit returns the changes of the schedule name (of every
// schedule when ""), newest first: those before the sequence number
// before (0 for the newest), at most limit (0: the server's default).
func (c *Client) ScheduleAudit(ctx context.Context, name string, before int64, limit int) (ScheduleAudit, error) {
	q := url.Values{}
	if before != 0 {
		q.Set("before", strconv.FormatInt(before, 10))
	}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := SchedulesAuditPath
	if name != "" {
		path = SchedulePath(name) + "/audit"
	}
	var a ScheduleAudit
	err := c.Do(ctx, http.MethodGet, withQuery(path, q), nil, &a)
	return a, err
}

func withQuery(path string, q url.Values) string {
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}
