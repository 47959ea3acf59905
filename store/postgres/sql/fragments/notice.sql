-- notice publishes rows on the store's notice channel (see notice.go), for
-- every replica's listener: one pg_notify per chunk of lines under the
-- payload's 8000-byte limit, sent when the statement's transaction
-- commits. Each line is a JSON array [kind, job, slot in µs since the
-- epoch, owner] (noticeLine). A chunk holds the lines of a run of per
-- consecutive ords, per chosen so that that many of the statement's
-- longest line, and their newlines, stay under 5000 bytes plus one line:
-- at most 7,500 bytes (names are at most 200 bytes, 1200 once escaped as
-- JSON, so a line is at most 2,500). Within a chunk the lines come in no
-- set order: each stands alone. No rows, no notification. Arguments (see
-- args): rows, a query of ord, kind, job, slot, owner.
--
-- Its cost is in every claim and end (thousands a second under load):
-- lines are built by concatenation (json_build_array cost twice as much)
-- and chunked by their ords (a running sum of their lengths, a window
-- function, cost as much as building them).
WITH lines AS MATERIALIZED (
    SELECT n.ord, {{template "noticeLine" args "kind" "n.kind" "job" "n.job" "slot" "n.slot" "owner" "n.owner"}} AS line
      FROM ({{.rows}}) n
)
SELECT pg_notify({{channel}}, string_agg(l.line, E'\n'))
  FROM lines l
 CROSS JOIN (SELECT 5000 / (max(octet_length(line)) + 1) + 1 AS per FROM lines) w
 GROUP BY l.ord / w.per
