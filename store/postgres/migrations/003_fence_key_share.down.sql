-- Back to the FOR SHARE lock of 001_init.
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
        FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'cronfence: lease % at generation % is no longer held', quote_literal(lease_name), lease_generation
              USING ERRCODE = 'CF001',
                    HINT = 'another owner took the lease over or it expired; this transaction must not commit';
    END IF;
    RETURN lease_generation;
END;
$$;
