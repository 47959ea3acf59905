-- Version 4: a failed slot open to a retry. Until retry_until (the job's
-- next slot, microseconds since the epoch), a live replica retries it when
-- the replica whose attempt failed is gone (stopped or died during the
-- backoff). NULL: never retried. As 006_retry_until on PostgreSQL.
ALTER TABLE cronfence_slots ADD COLUMN retry_until INTEGER;
CREATE INDEX cronfence_slots_retry ON cronfence_slots (retry_until) WHERE status = 'failed' AND retry_until IS NOT NULL;
