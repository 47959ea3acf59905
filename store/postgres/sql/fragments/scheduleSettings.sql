-- scheduleSettings is the settings of a schedules row alias as JSON, the
-- keys those of store.ScheduleSettings (durations in nanoseconds, as Go
-- encodes a time.Duration), for the change log's before and after. The
-- arguments go in as they were given (json_build_object copies a json
-- value verbatim), so a replica that applies the change gives its handler
-- the same bytes as one that listed the schedule; left out when NULL
-- (none), since a JSON null would decode as arguments. Arguments (see
-- args): row.
CASE WHEN {{.row}}.args IS NULL THEN json_build_object('spec', {{.row}}.spec, 'timeZone', {{.row}}.time_zone, 'kind', {{.row}}.kind, 'overlap', {{.row}}.overlap, 'catchUpWindow', {{.row}}.catch_up_window_ns, 'leaseTTL', {{.row}}.lease_ttl_ns, 'timeout', {{.row}}.timeout_ns, 'deadline', {{.row}}.deadline_ns, 'maxAttempts', {{.row}}.max_attempts, 'retryBackoff', {{.row}}.retry_backoff_ns, 'disabled', {{.row}}.disabled, 'catchUp', {{.row}}.catch_up, 'maxCatchUp', {{.row}}.max_catch_up, 'jitter', {{.row}}.jitter_ns, 'exclude', {{.row}}.exclude)
     ELSE json_build_object('spec', {{.row}}.spec, 'timeZone', {{.row}}.time_zone, 'kind', {{.row}}.kind, 'overlap', {{.row}}.overlap, 'catchUpWindow', {{.row}}.catch_up_window_ns, 'leaseTTL', {{.row}}.lease_ttl_ns, 'timeout', {{.row}}.timeout_ns, 'deadline', {{.row}}.deadline_ns, 'maxAttempts', {{.row}}.max_attempts, 'retryBackoff', {{.row}}.retry_backoff_ns, 'disabled', {{.row}}.disabled, 'catchUp', {{.row}}.catch_up, 'maxCatchUp', {{.row}}.max_catch_up, 'jitter', {{.row}}.jitter_ns, 'exclude', {{.row}}.exclude, 'args', {{.row}}.args) END
