-- A failed slot open to a retry: until retry_until (the job's next slot),
-- a live replica retries it when the replica whose attempt failed is gone
-- (stopped or died during the backoff). NULL: never retried. The partial
-- index keeps the interrupted-run scan's read of them to the handful open
-- now, whatever the history.
ALTER TABLE {{schema}}.slots ADD COLUMN retry_until timestamptz;
CREATE INDEX slots_retry_idx ON {{schema}}.slots (retry_until) WHERE status = 'failed' AND retry_until IS NOT NULL;
