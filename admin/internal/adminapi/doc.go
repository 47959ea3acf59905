// Package adminapi serves cronfence's admin REST API under /api/admin/cron,
// plus /healthz and /readyz, over a running Scheduler.
//
// Its answers are the types of package admin/client, built by
// internal/adminview from the store's rows; package admin mounts it beside
// the dashboard.
//
// Every /api/admin/ request needs a bearer token in the Authorization header
// (never a cookie); with no token configured every request is refused (401).
// A "read" token may GET; writes (PUT, POST, DELETE) need an "admin" token. Errors are
// always JSON {"code", "message", "details"}.
//
//	GET  /api/admin/cron               every job (see client.Job)
//	GET  /api/admin/cron/{job}         one job
//	PUT  /api/admin/cron/{job}         {"enabled": true|false|null, "note": "…"}
//	POST /api/admin/cron/{job}/run     manual run: 202 with its runId, or 409 CRON_JOB_ALREADY_EXECUTING
//	GET  /api/admin/cron/{job}/runs/{runId}  the manual run: running, then finished with its row
//	GET  /api/admin/cron/{job}/logs    ?limit=N (default 50, at most 1000), newest started first
//	GET  /api/admin/cron/{job}/backfills  its backfills, newest first (backfills.go)
//	POST /api/admin/cron/{job}/backfills  {"from", "to", "includeFailed", "rate"}: 201 with the backfill,
//	                                   409 BACKFILL_CONFLICT naming a running one; with "dryRun": 200 with the plan
//	GET, DELETE /api/admin/cron/{job}/backfills/{id}  one with its progress; DELETE cancels it (409 BACKFILL_ENDED)
//	GET  /api/admin/cron/alerts        ?open=true, ?kind=, ?subject=, ?limit=N (default 50, at most 1000), newest first
//	POST /api/admin/cron/alerts/{kind}/{subject}/ack  {"note": "…", "alertId": N}: acknowledge the open alert
//	GET  /api/admin/cron/replicas      the replica registry, each with "live"
//	GET  /api/admin/cron/schedules     ?after=NAME&limit=N: stored schedules in name order (schedules.go)
//	POST /api/admin/cron/schedules     create one; GET, PUT (body "version": the one read), DELETE (?version=) …/schedules/{name}
//	GET  /api/admin/cron/schedules/{name}/audit, /api/admin/cron/schedules-audit  the changes, newest first
//	GET  /healthz                      200 "ok" while the process serves
//	GET  /readyz                       200 when the store answers and its schema is current
//
// A job name containing "/" is sent escaped (%2F) in the path. A job named
// "alerts" or "replicas" is read with its name percent-escaped
// (/api/admin/cron/%61lerts): the literal segment is the endpoint (see
// match).
package adminapi
