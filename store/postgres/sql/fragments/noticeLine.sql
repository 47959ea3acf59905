-- noticeLine is one notice line, byte for byte as json_build_array(kind,
-- job, slot in µs since the epoch, owner)::text writes it (the listeners'
-- scan reads that form fastest; TestNoticeLineIsJSONBuildArraysText holds them equal).
-- Arguments (see args): kind, job, slot, owner, as SQL expressions, none
-- of them NULL (a NULL makes the line NULL, and string_agg drops it).
'[' || to_json({{.kind}}::text)::text || ', ' || to_json({{.job}}::text)::text || ', ' || (extract(epoch FROM {{.slot}}) * 1000000)::bigint || ', ' || to_json({{.owner}}::text)::text || ']'
