-- Back to version 8: no procedure, and the pause lock is only taken.
DROP PROCEDURE IF EXISTS {{schema}}.claim_committed(text, text[], timestamptz[], text[], boolean[], text[], integer[],
    bigint[], boolean[], text, timestamptz, bigint, boolean[], integer[], boolean[], bigint, jsonb, timestamptz);

CREATE OR REPLACE FUNCTION {{schema}}.lock_job_state(job text)
RETURNS void
LANGUAGE sql VOLATILE
AS $$ SELECT pg_advisory_xact_lock(hashtext('cronfence.pause:{{schema}}'), {{schema}}.job_state_bucket(job)) $$;
