SELECT job, enabled_override, override_by, override_at, note, override_until FROM {{schema}}.job_state ORDER BY job COLLATE "C"
