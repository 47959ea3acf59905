package postgres

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"text/template"

	"github.com/jackc/pgx/v5"
)

// Every statement the store sends is a file in sql/, NAME.sql for the
// queries field NAME, and the pieces two statements share are in
// sql/fragments/. A file is a text/template: {{schema}} is the quoted
// schema name, {{channel}} the notice channel's as a literal, {{template "leaseColumns"}} and the like include a fragment,
// and args passes a fragment its arguments. The comment block a file opens
// with is not sent. testdata/sql/NAME.sql keeps each statement as it is
// sent for the default schema (TestStatementsAsBuilt), to read, diff and
// paste into psql.
//
//go:embed sql/*.sql sql/fragments/*.sql
var sqlFiles embed.FS

// queries holds every statement with the schema filled in, built once per
// Store.
type queries struct {
	leaseAcquire, leaseRenew, leaseRenewBatch, leaseRelease, leaseGet, leaseFence string
	slotClaim, slotFinish, slotFinishBatch, slotGet, slotAbandon                  string
	slotListInterrupted, slotListRunning                                          string
	slotComplete, jobRegister, slotSkip                                           string
	// slotClaimDeclared is slotClaim without the pause overrides: the
	// declared values decide, for when job_state cannot be read.
	slotClaimDeclared string
	// slotClaimJSON and slotClaimDeclaredJSON answer one row, the JSON of
	// theirs; claimCommitted runs either and commits before it reads the
	// clock (migration 009).
	slotClaimJSON, slotClaimDeclaredJSON, claimCommitted string
	// claimJSON and claimDeclaredJSON are those two with the names they are
	// prepared under on a connection, derived once.
	claimJSON, claimDeclaredJSON                                                     namedStatement
	runInsert, runInterrupted, runGet, runList, runListJob, runListPerJob, pruneStep string
	jobStateSet, jobStateList                                                        string
	replicaHeartbeat, replicaBeat, replicaList, replicaRemove                        string
	alertRaise, alertResolve, alertAcknowledge, alertList, alertListOpen             string
	leaseList, monitorSnapshot                                                       string
	// The stored schedules: each write runs behind scheduleLock in one
	// transaction (see schedule.go).
	scheduleLock, scheduleCreate, scheduleUpdate, scheduleDelete string
	scheduleGet, scheduleList, scheduleChanges                   string
	scheduleAudit, scheduleAuditName                             string
	// The backfills (see backfill.go) and the slot listing they read.
	backfillCreate, backfillRunning, backfillGet, backfillList, backfillListJob string
	backfillProgress, backfillCancel, slotList                                  string
}

// byName maps each statement's file name (without .sql) to its field.
func (q *queries) byName() map[string]*string {
	return map[string]*string{
		"leaseAcquire": &q.leaseAcquire, "leaseRenew": &q.leaseRenew, "leaseRenewBatch": &q.leaseRenewBatch,
		"leaseRelease": &q.leaseRelease, "leaseGet": &q.leaseGet, "leaseFence": &q.leaseFence, "leaseList": &q.leaseList,
		"slotClaim": &q.slotClaim, "slotClaimDeclared": &q.slotClaimDeclared,
		"slotClaimJSON": &q.slotClaimJSON, "slotClaimDeclaredJSON": &q.slotClaimDeclaredJSON, "claimCommitted": &q.claimCommitted, "slotFinish": &q.slotFinish, "slotFinishBatch": &q.slotFinishBatch,
		"slotGet": &q.slotGet, "slotListInterrupted": &q.slotListInterrupted, "slotListRunning": &q.slotListRunning, "slotAbandon": &q.slotAbandon,
		"slotComplete": &q.slotComplete, "slotSkip": &q.slotSkip, "jobRegister": &q.jobRegister,
		"jobStateSet": &q.jobStateSet, "jobStateList": &q.jobStateList,
		"runInsert": &q.runInsert, "runInterrupted": &q.runInterrupted, "runGet": &q.runGet, "runList": &q.runList, "runListJob": &q.runListJob, "runListPerJob": &q.runListPerJob, "pruneStep": &q.pruneStep,
		"replicaHeartbeat": &q.replicaHeartbeat, "replicaBeat": &q.replicaBeat, "replicaList": &q.replicaList, "replicaRemove": &q.replicaRemove,
		"alertRaise": &q.alertRaise, "alertResolve": &q.alertResolve, "alertAcknowledge": &q.alertAcknowledge, "alertList": &q.alertList, "alertListOpen": &q.alertListOpen, "monitorSnapshot": &q.monitorSnapshot,
		"scheduleLock": &q.scheduleLock, "scheduleCreate": &q.scheduleCreate, "scheduleUpdate": &q.scheduleUpdate, "scheduleDelete": &q.scheduleDelete,
		"scheduleGet": &q.scheduleGet, "scheduleList": &q.scheduleList, "scheduleChanges": &q.scheduleChanges,
		"scheduleAudit": &q.scheduleAudit, "scheduleAuditName": &q.scheduleAuditName,
		"backfillCreate": &q.backfillCreate, "backfillRunning": &q.backfillRunning, "backfillGet": &q.backfillGet,
		"backfillList": &q.backfillList, "backfillListJob": &q.backfillListJob, "backfillProgress": &q.backfillProgress,
		"backfillCancel": &q.backfillCancel, "slotList": &q.slotList,
	}
}

// newQueries expands every statement for schema. The files are embedded and
// covered by TestStatementsAsBuilt, so an error here is a bug of this
// package, not of the caller's: it panics.
func newQueries(schema string) queries {
	t, err := parseStatements(pgx.Identifier{schema}.Sanitize(), noticeChannel(schema))
	if err != nil {
		panic(err)
	}
	var q queries
	for name, p := range q.byName() {
		var b bytes.Buffer
		if err := t.ExecuteTemplate(&b, name, map[string]any{"declared": false, "json": false}); err != nil {
			panic(fmt.Sprintf("postgres: statement %s: %v", name, err))
		}
		*p = b.String()
	}
	q.claimJSON, q.claimDeclaredJSON = named(q.slotClaimJSON), named(q.slotClaimDeclaredJSON)
	return q
}

// namedStatement is a statement and the name it is prepared under on a
// connection: one derived from its text (schema included), so that two
// stores on one pool never share a name.
type namedStatement struct{ name, sql string }

func named(sql string) namedStatement {
	sum := sha256.Sum256([]byte(sql))
	return namedStatement{name: "cronfence_" + hex.EncodeToString(sum[:12]), sql: sql}
}

// parseStatements parses every file of sql/ and sql/fragments/ as a
// template named after the file, without its opening comment block.
func parseStatements(quotedSchema, channel string) (*template.Template, error) {
	t := template.New("").Option("missingkey=error").Funcs(template.FuncMap{
		"schema":  func() string { return quotedSchema },
		"channel": func() string { return "'" + channel + "'" },
		"args":    args,
	})
	for _, dir := range []string{"sql", "sql/fragments"} {
		files, err := fs.Glob(sqlFiles, dir+"/*.sql")
		if err != nil {
			return nil, err
		}
		for _, file := range files {
			text, err := sqlFiles.ReadFile(file)
			if err != nil {
				return nil, err
			}
			name := strings.TrimSuffix(path.Base(file), ".sql")
			if _, err := t.New(name).Parse(withoutOpeningComment(string(text))); err != nil {
				return nil, fmt.Errorf("postgres: %s: %w", file, err)
			}
		}
	}
	return t, nil
}

// withoutOpeningComment drops the -- lines (and blank lines) a statement
// file opens with, and the final newline: what the file says of the
// statement is not sent with it, and a fragment fits inside a line.
func withoutOpeningComment(text string) string {
	for strings.HasPrefix(text, "--") || strings.HasPrefix(text, "\n") {
		_, text, _ = strings.Cut(text, "\n")
	}
	return strings.TrimSuffix(text, "\n")
}

// args makes the data a fragment is given: args "alias" "t" "owner" "$2"
// is {alias: t, owner: $2}.
func args(pairs ...any) (map[string]any, error) {
	if len(pairs)%2 != 0 {
		return nil, fmt.Errorf("args: %d values, want name and value pairs", len(pairs))
	}
	m := make(map[string]any, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		name, ok := pairs[i].(string)
		if !ok {
			return nil, fmt.Errorf("args: name %v is not a string", pairs[i])
		}
		m[name] = pairs[i+1]
	}
	return m, nil
}
