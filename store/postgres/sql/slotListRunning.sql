-- slotListRunning lists every running slot with its owner, for a listener
-- that starts (or starts again) and so missed their claims' notices (see
-- notice.go). The partial index on running slots keeps it cheap: a
-- handful of rows, whatever the history.
SELECT job, slot, owner
  FROM {{schema}}.slots
 WHERE status = 'running'
 ORDER BY slot
