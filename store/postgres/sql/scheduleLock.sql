-- scheduleLock.sql begins every schedule write (scheduleCreate,
-- scheduleUpdate, scheduleDelete), in the write's transaction: it locks the
-- one row of schedule_seq until the transaction ends, so schedule writes
-- take turns. The write that follows, a statement of its own, reads what
-- the writes before it committed, and gives its change the next sequence
-- number only once they committed theirs: numbers commit in order (see
-- migration 012). Schedule writes are an operator's, rare: waiting in
-- turn costs nothing that matters.
SELECT seq FROM {{schema}}.schedule_seq WHERE id = 1 FOR UPDATE
