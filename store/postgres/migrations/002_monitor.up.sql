-- Replicas: the registry of live schedulers. Each replica upserts its row on
-- every heartbeat and deletes it on a graceful stop; a crashed replica's row
-- stays, its heartbeat_at getting older, until Prune removes it. jobs is
-- the JSON array of the jobs it registers with their settings hash, for
-- the config drift and orphan job checks.
CREATE TABLE {{schema}}.replicas (
    owner           text        PRIMARY KEY,
    host            text        NOT NULL,
    pid             integer     NOT NULL CHECK (pid >= 0),
    version         text        NOT NULL,
    started_at      timestamptz NOT NULL,
    heartbeat_at    timestamptz NOT NULL,
    clock_offset_ns bigint      NOT NULL,  -- the replica's clock minus the database clock
    timers          boolean     NOT NULL,
    jobs            jsonb       NOT NULL CHECK (jsonb_typeof(jobs) = 'array')
);

-- Alerts: absences noticed by the checks. An alert is open while
-- resolved_at is NULL; the partial unique index makes exactly one open alert
-- per (kind, subject), so replicas racing to raise the same alert raise it
-- once, and a raise after the resolve opens a new row.
CREATE TABLE {{schema}}.alerts (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind         text        NOT NULL,
    subject      text        NOT NULL,
    message      text        NOT NULL,
    details      jsonb       NOT NULL CHECK (jsonb_typeof(details) = 'object'),
    raised_by    text        NOT NULL,
    raised_at    timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL,
    resolved_at  timestamptz
);
CREATE UNIQUE INDEX alerts_open_idx ON {{schema}}.alerts (kind, subject) WHERE resolved_at IS NULL;

-- Prune deletes resolved alerts by age.
CREATE INDEX alerts_resolved_at_idx ON {{schema}}.alerts (resolved_at) WHERE resolved_at IS NOT NULL;
