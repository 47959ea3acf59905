-- cronfence SQLite schema, version 2: the replica registry and the alerts of
-- absence monitoring.

-- One row per live scheduler: upserted on every heartbeat, deleted on a
-- graceful stop. A crashed replica's row stays, its heartbeat_at getting
-- older, until Prune removes it. jobs is the JSON array of the jobs it
-- registers with their settings hash.
CREATE TABLE cronfence_replicas (
    owner           TEXT    NOT NULL PRIMARY KEY,
    host            TEXT    NOT NULL,
    pid             INTEGER NOT NULL CHECK (pid >= 0),
    version         TEXT    NOT NULL,
    started_at      INTEGER NOT NULL,
    heartbeat_at    INTEGER NOT NULL,
    clock_offset_ns INTEGER NOT NULL, -- the replica's clock minus the database clock
    timers          INTEGER NOT NULL CHECK (timers IN (0, 1)),
    jobs            TEXT    NOT NULL CHECK (json_valid(jobs) AND json_type(jobs) = 'array')
) STRICT;

-- One row per alert. It is open while resolved_at is NULL; the partial
-- unique index allows one open alert per (kind, subject), and a raise after
-- the resolve opens a new row. AUTOINCREMENT: ids are never reused after a
-- prune, so a new alert never takes an old one's id.
CREATE TABLE cronfence_alerts (
    id           INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    kind         TEXT    NOT NULL,
    subject      TEXT    NOT NULL,
    message      TEXT    NOT NULL,
    details      TEXT    NOT NULL CHECK (json_valid(details) AND json_type(details) = 'object'),
    raised_by    TEXT    NOT NULL,
    raised_at    INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL,
    resolved_at  INTEGER
) STRICT;
CREATE UNIQUE INDEX cronfence_alerts_open ON cronfence_alerts (kind, subject) WHERE resolved_at IS NULL;

-- Prune deletes resolved alerts by age.
CREATE INDEX cronfence_alerts_resolved ON cronfence_alerts (resolved_at) WHERE resolved_at IS NOT NULL;
