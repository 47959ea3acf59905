-- The columns each row type is read from, in the order its scan function
-- (the Scan calls of lease.go, scanSlot, scannedRun, scannedAlert,
-- scanReplica, scannedSchedule, scannedChange, scanBackfill) takes them; the schedules'
-- of a row alias (args "row" "s").
-- JSON columns travel as text (jobs::text, details::text), so pgx's choice
-- of JSON encoding for a Go type never decides what is stored.
{{define "leaseColumns"}}name, owner, generation, acquired_at, renewed_at, expires_at{{end}}
{{define "slotColumns"}}job, slot, status, owner, lease_name, generation, attempts, started_at, finished_at{{end}}
{{define "runColumns"}}id, job, slot, manual, catch_up, owner, generation, lease_name, attempt, started_at, finished_at, success, skipped, reason, error, logs{{end}}
{{define "replicaColumnsBeforeJobs"}}owner, host, pid, version, started_at, heartbeat_at, clock_offset_ns, timers{{end}}
{{define "replicaColumns"}}{{template "replicaColumnsBeforeJobs"}}, jobs::text, kinds::text{{end}}
{{define "alertColumns"}}id, kind, subject, message, details::text, raised_by, raised_at, last_seen_at, resolved_at, fingerprint, acknowledged_by, acknowledged_at, acknowledged_note{{end}}
{{define "scheduleColumns"}}{{.row}}.id, {{.row}}.name, {{.row}}.spec, {{.row}}.time_zone, {{.row}}.kind, {{.row}}.args::text, {{.row}}.overlap, {{.row}}.catch_up_window_ns, {{.row}}.lease_ttl_ns, {{.row}}.timeout_ns, {{.row}}.deadline_ns, {{.row}}.max_attempts, {{.row}}.retry_backoff_ns, {{.row}}.disabled, {{.row}}.catch_up, {{.row}}.max_catch_up, {{.row}}.jitter_ns, {{.row}}.exclude, {{.row}}.version, {{.row}}.created_at, {{.row}}.created_by, {{.row}}.updated_at, {{.row}}.updated_by{{end}}
{{define "scheduleChangeColumns"}}{{.row}}.seq, {{.row}}.action, {{.row}}.name, {{.row}}.schedule_id, {{.row}}.version, {{.row}}.changed_by, {{.row}}.changed_at, {{.row}}.settings_before::text, {{.row}}.settings_after::text{{end}}
{{define "backfillColumns"}}id, job, range_from, range_to, include_failed, rate, total, state, cursor_slot, counts::text, driver, created_by, created_at, updated_at, finished_at, cancelled_by{{end}}
