#!/usr/bin/env bash
# pgcpu.sh: which PostgreSQL processes of a running BenchmarkReplicas
# cluster used the CPU over the next SECONDS (default 15): the backends
# serving the replicas' statements, their notice listeners (LISTEN), and
# the server's own processes (autovacuum, checkpointer, WAL writer...), in
# cores. It reads /proc, so run it beside the benchmark, during its window
# (docs/benchmarks.md, "A run's cost on a durable database").
set -euo pipefail
secs="${1:-15}"
pid=$(pgrep -f 'postgres -D .*cronfence-pg-' | head -1) || { echo "pgcpu: no BenchmarkReplicas cluster runs" >&2; exit 1; }
port=$(tr '\0' ' ' < "/proc/$pid/cmdline" | grep -o -- '-p [0-9]*' | head -1 | cut -d' ' -f2)
ticks=$(getconf CLK_TCK)
snap() { # pid and CPU ticks of each of the cluster's processes
	for p in $(pgrep -P "$pid") "$pid"; do
		awk -v p="$p" '{print p, $14 + $15}' "/proc/$p/stat" 2>/dev/null || true
	done | sort
}
before=$(snap)
sleep "$secs"
after=$(snap)
# What each backend runs: LISTEN for a listener, else a statement.
kinds=$(psql -h 127.0.0.1 -p "$port" -U postgres -d postgres -Atc \
	"SELECT pid, CASE WHEN backend_type <> 'client backend' THEN backend_type
	                  WHEN query LIKE 'LISTEN%' THEN 'listener (LISTEN)'
	                  WHEN usename = 'replica' THEN 'statements of the replicas'
	                  ELSE 'other client' END
	   FROM pg_stat_activity" | tr '|' ' ' | sort)
join <(join <(echo "$before") <(echo "$after")) <(echo "$kinds") -a 1 |
	awk -v secs="$secs" -v hz="$ticks" '{
		kind = $4; for (i = 5; i <= NF; i++) kind = kind " " $i
		if (kind == "") kind = "postmaster"
		used[kind] += $3 - $2; total += $3 - $2
	} END {
		for (k in used) printf "%6.2f cores  %s\n", used[k] / hz / secs, k
		printf "%6.2f cores  in all\n", total / hz / secs
	}' | sort -rn
