-- Reverses 007_backfills.up.sql, where its table is there.
-- {{prefix}}schema_migrations belongs to the migration runner: whoever
-- applies this by hand also deletes its row for version 7.
DROP TABLE IF EXISTS {{prefix}}backfills;
