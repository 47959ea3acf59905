package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/cronfence/cronfence/e2e/internal/mycluster"
)

// mysqlDatabase is the database of the throwaway server that cronfence and
// the chaos tables live in.
const mysqlDatabase = "cronfence"

// mysqlSchema is chaosSchema for MySQL/MariaDB, created in cronfence's
// database after `cronfence migrate`:
//
//   - chaos_ledger: one row per committed effect, no unique key on (job,
//     slot). committed_at is stamped by the job's own last statement
//     before COMMIT, after complete() (MySQL has no deferred trigger): by
//     then the fence holds the lease row in share mode, so no takeover can
//     commit before this transaction does.
//   - chaos_lease_history: every insert or update of cronfence_leases,
//     written by triggers in the same transaction, at the time of the
//     write (SYSDATE, not NOW, which is the statement's start), in UTC
//     whatever the writer's session time zone.
const mysqlSchema = `
CREATE TABLE chaos_ledger (
    id           BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    job          VARCHAR(200) NOT NULL,
    lease        VARCHAR(200) NOT NULL,
    slot         VARCHAR(64)  NOT NULL,
    generation   BIGINT       NOT NULL,
    attempt      INT          NOT NULL,
    replica      VARCHAR(64)  NOT NULL,
    inserted_at  DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    committed_at DATETIME(6)  NULL
) ENGINE = InnoDB;
CREATE TABLE chaos_lease_history (
    id          BIGINT         NOT NULL AUTO_INCREMENT PRIMARY KEY,
    name        VARBINARY(200) NOT NULL,
    owner       VARBINARY(200) NOT NULL,
    generation  BIGINT         NOT NULL,
    expires_at  DATETIME(6)    NOT NULL,
    changed_at  DATETIME(6)    NOT NULL
) ENGINE = InnoDB;
CREATE TRIGGER chaos_lease_insert AFTER INSERT ON cronfence_leases FOR EACH ROW
    INSERT INTO chaos_lease_history (name, owner, generation, expires_at, changed_at)
    VALUES (NEW.name, NEW.owner, NEW.generation, NEW.expires_at, UTC_TIMESTAMP(6) + INTERVAL TIMESTAMPDIFF(MICROSECOND, NOW(6), SYSDATE(6)) MICROSECOND);
CREATE TRIGGER chaos_lease_update AFTER UPDATE ON cronfence_leases FOR EACH ROW
    INSERT INTO chaos_lease_history (name, owner, generation, expires_at, changed_at)
    VALUES (NEW.name, NEW.owner, NEW.generation, NEW.expires_at, UTC_TIMESTAMP(6) + INTERVAL TIMESTAMPDIFF(MICROSECOND, NOW(6), SYSDATE(6)) MICROSECOND);
`

// mysqlJobScript is jobScript on MySQL, with the mysql client: the fence
// and complete() are the procedures cronfence_fence and cronfence_complete,
// which raise SQLSTATE CF001 when the generation no longer holds the lease.
// As on PostgreSQL, complete() is the transaction's last statement before
// the commit stamp, after the hold.
const mysqlJobScript = scriptHead + `fence="CALL cronfence_fence('$CRONFENCE_LEASE', $CRONFENCE_GENERATION);"
complete="CALL cronfence_complete('$CRONFENCE_LEASE', $CRONFENCE_GENERATION);"
once="WHERE NOT EXISTS (SELECT 1 FROM chaos_ledger WHERE job = '$CRONFENCE_JOB' AND slot = '$CRONFENCE_SLOT')"
` + writeModes + `out=$(mysql --protocol=tcp -h "$CHAOS_MYSQL_HOST" -P "$CHAOS_MYSQL_PORT" -u root -D ` + mysqlDatabase + ` --batch --skip-column-names --connect-timeout=5 2>&1 <<SQL
SET time_zone = '+00:00';
START TRANSACTION;
$fence
INSERT INTO chaos_ledger (job, lease, slot, generation, attempt, replica)
SELECT '$CRONFENCE_JOB', '$CRONFENCE_LEASE', '$CRONFENCE_SLOT', $CRONFENCE_GENERATION, $CRONFENCE_ATTEMPT, '$CHAOS_REPLICA'
 FROM DUAL $once;
SELECT CONCAT('inserted=', ROW_COUNT());
DO SLEEP($CHAOS_HOLD);
$complete
UPDATE chaos_ledger SET committed_at = UTC_TIMESTAMP(6) + INTERVAL TIMESTAMPDIFF(MICROSECOND, NOW(6), SYSDATE(6)) MICROSECOND
 WHERE id = LAST_INSERT_ID() AND ROW_COUNT() >= 0;
COMMIT;
SQL
)
` + scriptTail

func (h *harness) setUpMySQL(replicas int) error {
	if _, err := exec.LookPath("mysql"); err != nil {
		return fmt.Errorf("the MySQL chaos jobs need the mysql client: apt-get install mariadb-client")
	}
	h.mysql = mycluster.New(h.t)
	admin, err := h.mysqlDB("")
	if err != nil {
		return err
	}
	_, err = admin.Exec("CREATE DATABASE " + mysqlDatabase)
	admin.Close()
	if err != nil {
		return fmt.Errorf("creating the database: %w", err)
	}
	if out, err := exec.Command(h.bin, "migrate", "--database", h.mysql.URL(mysqlDatabase)).CombinedOutput(); err != nil {
		return fmt.Errorf("cronfence migrate: %w\n%s", err, out)
	}
	db, err := h.mysqlDB(mysqlDatabase)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Exec(mysqlSchema); err != nil {
		return fmt.Errorf("creating the chaos tables: %w", err)
	}
	if h.config, err = writeConfig(h.dir, mysqlJobScript, h.write == writeComplete && !h.breakFencing); err != nil {
		return err
	}
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	for i := range replicas {
		p := toxiproxy.NewProxy(srv, fmt.Sprintf("r%d", i), "127.0.0.1:0", h.mysql.Addr())
		if err := p.Start(); err != nil {
			return fmt.Errorf("proxy r%d: %w", i, err)
		}
		h.t.Cleanup(p.Stop)
		h.proxies = append(h.proxies, p)
	}
	return nil
}

// mysqlDB is a pool on the throwaway server directly (no proxy), on
// database name ("" for none), allowing several statements a query.
func (h *harness) mysqlDB(name string) (*sql.DB, error) {
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.DBName = "tcp", h.mysql.Addr(), "root", name
	cfg.ParseTime, cfg.Loc, cfg.MultiStatements = true, time.UTC, true
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(connector), nil
}

// mysqlURL is the database through proxy p, as a replica reaches it.
func mysqlURL(p *toxiproxy.Proxy) string {
	return fmt.Sprintf("mysql://root@%s/%s?timeout=5s", p.Listen, mysqlDatabase)
}

func (h *harness) gatherMySQL(ctx context.Context) (*evidence, error) {
	db, err := h.mysqlDB(mysqlDatabase)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	query := func(what, q string, row func(scan func(...any) error) error) error {
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			return fmt.Errorf("reading %s: %w", what, err)
		}
		defer rows.Close()
		for rows.Next() {
			if err := row(rows.Scan); err != nil {
				return fmt.Errorf("reading %s: %w", what, err)
			}
		}
		return rows.Err()
	}
	ev := &evidence{}
	err = query("the ledger", `SELECT job, lease, slot, generation, attempt, replica, COALESCE(committed_at, inserted_at) FROM chaos_ledger ORDER BY id`,
		func(scan func(...any) error) error {
			var e effect
			var slot string
			if err := scan(&e.Job, &e.Lease, &slot, &e.Generation, &e.Attempt, &e.Replica, &e.CommittedAt); err != nil {
				return err
			}
			var err error
			if e.Slot, err = time.Parse(time.RFC3339Nano, slot); err != nil {
				return err
			}
			ev.ledger = append(ev.ledger, e)
			return nil
		})
	if err != nil {
		return nil, err
	}
	err = query("the lease history", `SELECT name, owner, generation, expires_at, changed_at FROM chaos_lease_history ORDER BY id`,
		func(scan func(...any) error) error {
			var c leaseChange
			if err := scan(&c.Name, &c.Owner, &c.Generation, &c.ExpiresAt, &c.ChangedAt); err != nil {
				return err
			}
			ev.history = append(ev.history, c)
			return nil
		})
	if err != nil {
		return nil, err
	}
	err = query("slots", `SELECT job, slot, status, generation, attempts FROM cronfence_slots ORDER BY job, slot`,
		func(scan func(...any) error) error {
			var s slotRow
			if err := scan(&s.Job, &s.Slot, &s.Status, &s.Generation, &s.Attempts); err != nil {
				return err
			}
			ev.slots = append(ev.slots, s)
			return nil
		})
	if err != nil {
		return nil, err
	}
	err = query("runs", `SELECT job, slot, generation, owner, catch_up, success, skipped, reason, error FROM cronfence_runs WHERE slot IS NOT NULL AND NOT manual ORDER BY id`,
		func(scan func(...any) error) error {
			var r runRow
			if err := scan(&r.Job, &r.Slot, &r.Generation, &r.Owner, &r.CatchUp, &r.Success, &r.Skipped, &r.Reason, &r.Error); err != nil {
				return err
			}
			ev.runs = append(ev.runs, r)
			return nil
		})
	if err != nil {
		return nil, err
	}
	return ev, h.readLogs(ev)
}

// mysqlHolders lists the owners of the job leases unexpired now.
func (h *harness) mysqlHolders(ctx context.Context) ([]string, error) {
	db, err := h.mysqlDB(mysqlDatabase)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT owner FROM cronfence_leases WHERE expires_at > UTC_TIMESTAMP(6) AND name LIKE 'job:%' ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var owners []string
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			return nil, err
		}
		owners = append(owners, o)
	}
	return owners, rows.Err()
}

// mysqlFaults are the faults of the MySQL run: every kind of the
// PostgreSQL one (pgrestart restarts mariadbd).
var mysqlFaults = []faultKind{faultKill, faultFreeze, faultPGRestart, faultPartition, faultLatency, faultRolling, faultOffset, faultPause}
