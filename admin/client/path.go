package client

import (
	"fmt"
	"net/url"
)

// Prefix is the path the admin API is served under, below any prefix the
// server mounts it at.
const Prefix = "/api/admin/cron"

// The ?limit= of the logs and alerts endpoints: its default, and the most
// a request may ask for (more is answered 400 INVALID_LIMIT).
const (
	DefaultLogsLimit   = 50
	MaxLogsLimit       = 1000
	DefaultAlertsLimit = 50
	MaxAlertsLimit     = 1000
)

// JobPath is the API's path of one job, its name escaped: GET and PUT it;
// /run and /logs follow it. A job named as an endpoint ("alerts",
// "replicas", "schedules", "schedules-audit") has its first letter
// percent-escaped, which the server reads as the job, never the endpoint.
func JobPath(job string) string {
	switch job {
	case "alerts", "replicas", "schedules", "schedules-audit":
		return Prefix + "/" + fmt.Sprintf("%%%02X", job[0]) + job[1:]
	}
	return Prefix + "/" + url.PathEscape(job)
}

// AlertAckPath is the path that acknowledges the open alert of (kind,
// subject), each escaped.
func AlertAckPath(kind, subject string) string {
	return Prefix + "/alerts/" + url.PathEscape(kind) + "/" + url.PathEscape(subject) + "/ack"
}
