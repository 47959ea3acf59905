-- spinUntil is a query of one row, the database clock once it reached the
-- instant its argument names (a timestamptz expression; NULL: at once).
-- pg_sleep wakes up to a millisecond or two late (it sleeps whole
-- milliseconds, rounded up), so it sleeps to 1.5 ms before the instant,
-- and spin reads the clock for the rest.
WITH RECURSIVE spin(t) AS (
    SELECT clock_timestamp()
      FROM (SELECT pg_sleep(extract(epoch FROM ({{.}}) - clock_timestamp()) - 0.0015)) z
    UNION ALL
    SELECT clock_timestamp() FROM spin WHERE spin.t < ({{.}}))
SELECT max(t) AS t FROM spin
