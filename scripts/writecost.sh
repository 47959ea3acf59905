#!/usr/bin/env bash
# writecost.sh: what the rows of a run cost to write by themselves, in the
# tables and indexes the migrations make, without the claim's and the
# finish's statements around them (docs/benchmarks.md, "What a run's
# rows cost"). Beside BenchmarkStore's
# SlotClaimBatch and SlotFinishBatch (the same rows, written by the real
# statements), it says how much of a run's database time is the writing.
#
# It makes a throwaway database on the PostgreSQL of $PGHOST/$PGPORT/$PGUSER
# (127.0.0.1, 5432, postgres unless set), migrates it, runs pgbench, and
# drops it. Each line is pgbench's average for a batch of 1,000 (so its
# milliseconds are microseconds an item). The lean statements are an
# experiment: the least one statement each could be (see their files).
set -euo pipefail
cd "$(dirname "$0")/.."
export PGHOST="${PGHOST:-127.0.0.1}" PGPORT="${PGPORT:-5432}" PGUSER="${PGUSER:-postgres}"
# What postgres.TunePool sets on the store's own pool: with the default
# random_page_cost (4) the lean finish read and hashed the whole slots
# table, growing with every round, rather than look its 1,000 rows up.
export PGOPTIONS="${PGOPTIONS:-} -c random_page_cost=1.1 -c jit=off"
db=cronfence_writecost_$$
rounds="${ROUNDS:-60}"
run=$(mktemp) lean=$(mktemp)
trap 'rm -f "$run" "$lean"; dropdb --if-exists "$db"' EXIT
createdb "$db"
go run ./cmd/cronfence migrate --database "postgres://$PGUSER@$PGHOST:$PGPORT/$db?sslmode=disable" > /dev/null
psql -q -d "$db" -c "CREATE SEQUENCE writecost_slot;
  INSERT INTO cronfence.leases (name, owner, generation, acquired_at, renewed_at, expires_at)
  SELECT 'job:job-' || g, 'r', 1, now(), now(), now() FROM generate_series(1, 1000) g"
cat scripts/writecost/claim.sql scripts/writecost/finish.sql > "$run"
cat scripts/writecost/leanclaim.sql scripts/writecost/leanfinish.sql > "$lean"
bench() { pgbench -n -t "$rounds" -f "$1" "$db" 2>&1 | sed -n 's/^latency average = //p'; }
for i in 1 2; do
  echo "claims' rows alone:             $(bench scripts/writecost/claim.sql)"
  echo "runs' rows alone (claim+finish): $(bench "$run")"
  echo "lean claim statement:           $(bench scripts/writecost/leanclaim.sql)"
  echo "lean claim+finish statements:   $(bench "$lean")"
done
