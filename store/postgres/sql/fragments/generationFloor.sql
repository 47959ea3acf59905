-- generationFloor is the least generation a lease may take on this
-- server: (timeline − 1) · 2^40, so 0 on a database that was never failed
-- over (generations go 1, 2, … as they always did) and above any generation
-- an earlier timeline can have issued once a standby is promoted.
--
-- That is what keeps a fencing token from being issued twice. An
-- asynchronous standby promoted after replication was cut off has lost the
-- old primary's last commits; one of them may have given holder A
-- generation n. Counting on from the lease row it has, the new primary
-- would give generation n again, to holder B, and A's writer (frozen
-- through the failover) would then pass fence(lease, n) there: two owners,
-- one token. A promotion always starts a new timeline, so on the new
-- primary B's generation is at least 2^40 · (timeline − 1), above every n,
-- and A's fence fails. The timeline is the one the server writes WAL on
-- now (the first 8 hex digits of the current WAL file's name), which
-- changes the moment a promotion ends, before any write is accepted, unlike
-- pg_control_checkpoint(), which lags until the next checkpoint. On a
-- standby (in recovery) the floor is 0: the statement fails on its write
-- anyway, as read-only. A counter of 2^40 per lease and timeline lasts
-- thousands of years at one acquisition a second.
CASE WHEN pg_is_in_recovery() THEN 0
           ELSE ((('x' || left(pg_walfile_name(pg_current_wal_lsn()), 8))::bit(32)::bigint - 1) << 40)
      END
