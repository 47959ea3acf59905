-- Back to version 3: no complete(), fence() without the 40001 translation,
-- no jobs table, no lease name on run rows.
DROP FUNCTION IF EXISTS {{schema}}.complete(text, bigint);
CREATE OR REPLACE FUNCTION {{schema}}.fence(lease_name text, lease_generation bigint)
RETURNS bigint
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM 1
       FROM {{schema}}.leases l
      WHERE l.name = lease_name
        AND l.generation = lease_generation
        AND l.expires_at > clock_timestamp()
        FOR KEY SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'cronfence: lease % at generation % is no longer held', quote_literal(lease_name), lease_generation
              USING ERRCODE = 'CF001',
                    HINT = 'another owner took the lease over or it expired; this transaction must not commit';
    END IF;
    RETURN lease_generation;
END;
$$;
DROP TABLE IF EXISTS {{schema}}.jobs;
DROP INDEX IF EXISTS {{schema}}.runs_holding_idx;
ALTER TABLE {{schema}}.runs DROP COLUMN IF EXISTS lease_name;
