// Package client is the Go side of cronfence's admin REST API: the types
// its JSON answers decode into, the paths of its endpoints, and Client,
// which sends a request with a bearer token and decodes the answer. A
// program that pauses, resumes or triggers jobs, reads their runs or
// watches the alerts of a running cronfence (the binary's serve --listen,
// or a service that mounts package admin) uses it, as the cronfence
// binary's admin commands do with --server.
//
// Each endpoint, under Prefix, answers:
//
//	GET  /api/admin/cron                     {"jobs": [Job]}
//	GET  /api/admin/cron/{job}               Job
//	PUT  /api/admin/cron/{job}               Job, after {"enabled": true|false|null, "note": "…"}
//	POST /api/admin/cron/{job}/run           202 {"jobId", "runId", "generation", "owner", "startedAt"}
//	GET  /api/admin/cron/{job}/runs/{runId}  {"jobId", "runId", "state", "run", "holder"}: "running" and its Holder, then "finished" and its Run
//	GET  /api/admin/cron/{job}/logs          {"jobId", "logs": [Run]}, newest started first
//	GET  /api/admin/cron/alerts              {"alerts": [Alert]}, newest first
//	POST /api/admin/cron/alerts/{kind}/{subject}/ack  Alert, after {"note": "…", "alertId": N}
//	GET  /api/admin/cron/replicas            ReplicaList
//	GET  /api/admin/cron/schedules           SchedulePage (Client.Schedules); POST: Schedule (CreateSchedule)
//	GET, PUT, DELETE …/schedules/{name}      Schedule (Schedule, UpdateSchedule, DeleteSchedule)
//	GET  …/schedules/{name}/audit, /api/admin/cron/schedules-audit  ScheduleAudit (ScheduleAudit)
//
// Every request needs a bearer token; writes need an admin one. An error
// is answered {"code", "message", "details"}, which Client returns as
// *Error; the details of a 409 CRON_JOB_ALREADY_EXECUTING from /run are
// {"log": Run, "holder": Holder}. Times are RFC 3339 strings, in UTC but
// for a job's next slot (in the job's zone), and null when unknown.
package client
