-- scheduleSettings is the settings of a schedules row alias as JSON, the
-- keys those of store.ScheduleSettings (durations in nanoseconds, as Go
-- encodes a time.Duration), for the change log's before and after. args
-- is left out when NULL (none): a JSON null would decode as arguments.
-- Arguments (see args): row.
(jsonb_build_object('spec', {{.row}}.spec, 'timeZone', {{.row}}.time_zone, 'kind', {{.row}}.kind, 'overlap', {{.row}}.overlap, 'catchUpWindow', {{.row}}.catch_up_window_ns, 'leaseTTL', {{.row}}.lease_ttl_ns, 'timeout', {{.row}}.timeout_ns, 'deadline', {{.row}}.deadline_ns, 'maxAttempts', {{.row}}.max_attempts, 'retryBackoff', {{.row}}.retry_backoff_ns, 'disabled', {{.row}}.disabled) || CASE WHEN {{.row}}.args IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('args', {{.row}}.args) END)
