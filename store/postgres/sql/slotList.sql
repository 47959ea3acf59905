-- slotList.sql: the slot rows of job $1 in [$2, $3), oldest first, at
-- most $4, through the slots' primary key (store.Backfills.SlotList).
SELECT {{template "slotColumns"}} FROM {{schema}}.slots
 WHERE job = $1 AND slot >= $2 AND slot < $3
 ORDER BY slot
 LIMIT $4
