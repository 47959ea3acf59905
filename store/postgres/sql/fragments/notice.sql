-- notice publishes rows on the store's notice channel (see notice.go), for
-- every replica's listener: one pg_notify per chunk of lines under the
-- payload's 8000-byte limit, sent when the statement's transaction
-- commits. A chunk holds lines while their sum stays under 5000 bytes,
-- plus the line that crosses it: at most 2.5 KB more (names are at most
-- 200 bytes, 1200 once escaped as JSON). Each line is
-- a JSON array [kind, job, slot in µs since the epoch, owner]. No rows, no
-- notification. Arguments (see args): rows, a query of ord, kind, job,
-- slot, owner.
SELECT pg_notify({{channel}}, string_agg(line, E'\n' ORDER BY ord))
  FROM (SELECT ord, line, sum(octet_length(line) + 1) OVER (ORDER BY ord) / 5000 AS chunk
          FROM (SELECT n.ord, json_build_array(n.kind, n.job, (extract(epoch FROM n.slot) * 1000000)::bigint, n.owner)::text AS line
                  FROM ({{.rows}}) n) lines) chunks
 GROUP BY chunk
