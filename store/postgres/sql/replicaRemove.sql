-- replicaRemove.sql deletes a replica's row and tells the listeners it is
-- gone (g), so none waits for it to claim a slot.
--
-- $1 owner.
WITH d AS (DELETE FROM {{schema}}.replicas WHERE owner = $1 RETURNING owner),
notice AS MATERIALIZED (
    {{template "notice" args "rows" "SELECT 1 AS ord, 'g' AS kind, '' AS job, 'epoch'::timestamptz AS slot, d.owner FROM d"}}
)
SELECT count(*) FROM notice
