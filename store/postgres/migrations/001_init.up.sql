-- Leases: one row per lease name (job leases and ad-hoc locks). Rows are
-- never deleted, so the generation of a name only grows and can serve as a
-- fencing token.
CREATE TABLE {{schema}}.leases (
    name        text        PRIMARY KEY,
    owner       text        NOT NULL,
    generation  bigint      NOT NULL CHECK (generation > 0),
    acquired_at timestamptz NOT NULL,
    renewed_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    -- The owner's liveness lock (an advisory lock key its process holds on
    -- a session of its own), or NULL. A contender that can take that lock
    -- knows the owner's session ended and may take the lease over at once.
    live_key    bigint
);

-- Slots: the claim of one intended occurrence of a job (the window registry).
CREATE TABLE {{schema}}.slots (
    job         text        NOT NULL,
    slot        timestamptz NOT NULL,
    status      text        NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'skipped', 'buffered')),
    owner       text        NOT NULL,
    lease_name  text        NOT NULL,
    generation  bigint      NOT NULL,
    attempts    integer     NOT NULL CHECK (attempts >= 0), -- 0: skipped or buffered, never ran
    started_at  timestamptz NOT NULL,
    finished_at timestamptz,
    PRIMARY KEY (job, slot)
);

-- Running slots, for the scan of interrupted runs.
CREATE INDEX slots_running_idx ON {{schema}}.slots (slot) WHERE status = 'running';

-- Slots waiting for the current run to end (overlap policy buffer-one).
CREATE INDEX slots_buffered_idx ON {{schema}}.slots (job, slot) WHERE status = 'buffered';

-- Job state: the pause override every replica reads before claiming.
CREATE TABLE {{schema}}.job_state (
    job              text        PRIMARY KEY,
    enabled_override boolean,                    -- NULL: follow the declared value
    override_by      text        NOT NULL,
    override_at      timestamptz NOT NULL,
    note             text        NOT NULL DEFAULT ''
);

-- Runs: the history of executions and of recorded skips.
CREATE TABLE {{schema}}.runs (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job         text        NOT NULL,
    slot        timestamptz,
    manual      boolean     NOT NULL DEFAULT false,
    catch_up    boolean     NOT NULL DEFAULT false,
    owner       text        NOT NULL DEFAULT '',
    generation  bigint      NOT NULL DEFAULT 0,
    attempt     integer     NOT NULL DEFAULT 0,
    started_at  timestamptz NOT NULL,
    finished_at timestamptz NOT NULL,
    success     boolean     NOT NULL,
    skipped     boolean     NOT NULL DEFAULT false,
    reason      text        NOT NULL DEFAULT '',
    error       text        NOT NULL DEFAULT '',
    logs        text[]      NOT NULL DEFAULT '{}'
);
CREATE INDEX runs_job_id_idx ON {{schema}}.runs (job, id);
CREATE INDEX runs_started_at_idx ON {{schema}}.runs (started_at);

-- fence(name, generation) lets any client that knows its generation (a
-- shell job's psql, a service in another language) fence its own write
-- transaction with one SELECT. FOR SHARE holds the lease row until the
-- transaction ends, so a takeover (which must update the row) waits for the
-- commit. clock_timestamp(), not now(): now() is frozen at the start of the
-- caller's transaction and would let a long transaction pass a stale check.
CREATE FUNCTION {{schema}}.fence(lease_name text, lease_generation bigint)
RETURNS bigint
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM 1
       FROM {{schema}}.leases l
      WHERE l.name = lease_name
        AND l.generation = lease_generation
        AND l.expires_at > clock_timestamp()
        FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'cronfence: lease % at generation % is no longer held', quote_literal(lease_name), lease_generation
              USING ERRCODE = 'CF001',
                    HINT = 'another owner took the lease over or it expired; this transaction must not commit';
    END IF;
    RETURN lease_generation;
END;
$$;
