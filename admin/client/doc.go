// Package client holds the JSON of cronfence's admin REST API and a small
// Go client for it: what a program that pauses, resumes or triggers jobs,
// reads their runs or watches the alerts of a running cronfence (the
// binary's `serve --listen`, or a service that mounts package admin)
// decodes. The cronfence binary's admin commands use it with --server.
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
//
// Any other answer is an Error: {"code", "message", "details"}; a 409
// CRON_JOB_ALREADY_EXECUTING of /run has details {"log": Run, "holder":
// Holder}. Times are RFC 3339 strings in UTC, null when unknown.
//
// Every request needs a bearer token; writes need an admin one. Client
// sends it, and answers anything but 2xx as *Error.
package client
