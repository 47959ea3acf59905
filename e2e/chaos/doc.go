// Package chaos is cronfence's multi-process chaos suite: real `cronfence
// serve` processes built from the tree, a throwaway PostgreSQL cluster, an
// in-process toxiproxy between each replica and the database, faults on a
// seeded random schedule, and a checker that reads what actually happened.
//
// Each job's command is a shell script that logs its start to a file of its
// replica, then writes its effect into a ledger table in one transaction: a
// plain insert (no idempotency guard), then, as its last statement before
// COMMIT, cronfence.complete($CRONFENCE_LEASE, $CRONFENCE_GENERATION), which
// fences the transaction and completes the slot in it, so the effect and
// the slot's completion commit together. Every committed insert is an
// effect. The checker compares the ledger, cronfence's slots and runs, a
// lease history recorded by a trigger, the start logs and the fault
// timeline, and fails the test on any duplicate effect, effect committed
// without its slot's completion, slot completed twice, commit by a
// superseded generation, fence refusal without a lease loss, run of a
// paused job, missed slot while a healthy replica could reach the database,
// catch-up the scheduler owed but did not run, slot left running after the
// settle phase, slot failed without its effect or a recorded reason, or
// process left behind. CHAOS_WRITE=fence or fence-once write with fence()
// alone (plainly, or behind an idempotency guard), for the comparison of
// designs; CHAOS_BREAK_FENCING=1 leaves out fence() and complete().
//
// The runs CI makes (make e2e) run side by side, three at a time (-parallel
// 3): each is a world of its own (its database, proxies and replicas, on
// ports of their own; its faults touch only its own processes), and one
// run keeps two cores 10 to 30 % busy, waiting on its fault schedule. Side
// by side they also run under more contention for the CPU, which the
// checker's rules must hold under too.
//
//	go test ./chaos -run TestChaosShort -v            # ~2-3 minutes: a fixed seed and a random one
//	CHAOS_SEED=42 go test ./chaos -run TestChaosShort  # replay a seed (replaces the random one)
//	CHAOS_DURATION=30m go test ./chaos -run TestChaosSoak -timeout 0 -v
//	go test ./chaos -run TestChaosSQLite -v             # replicas sharing one SQLite file
//	go test ./chaos -run 'TestChaosMySQL$' -v           # a throwaway MariaDB server (mariadbd) behind proxies
//	go test ./chaos -run TestChaosMySQLCatchesBrokenFencing -v  # its checker must catch a build without fencing
//	go test ./chaos -run TestChaosCatchesBrokenFencing # the checker must catch a build without fencing
//	CHAOS_COMPARE=1 go test ./chaos -run TestChaosCompareDesigns -v -timeout 30m  # make compare
//	go test -short ./chaos                             # the checker's own tests only
//
// Other knobs: CHAOS_REPLICAS (default 3), CHAOS_SHORT_DURATION (50s per
// seed), CHAOS_BIN (a prebuilt cronfence instead of building the tree),
// CHAOS_KEEP=1 (keep the run's logs and config for a post-mortem).
//
// The tests need the PostgreSQL server binaries (initdb, pg_ctl) and psql;
// the MySQL run, the MariaDB server binaries (mariadb-install-db, mariadbd)
// and the mysql client. The machine's own servers are never touched: every
// fault hits a throwaway one.
package chaos
