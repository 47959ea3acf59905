-- Back to version 5: failed slots are retried only by the replica whose
-- attempt failed.
DROP INDEX {{schema}}.slots_retry_idx;
ALTER TABLE {{schema}}.slots DROP COLUMN retry_until;
