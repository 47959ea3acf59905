package sqlstore

import (
	"strings"

	"github.com/cronfence/cronfence/store"
)

// RunListQuery is the query of Store.RunList on the runs table and its
// arguments. It holds only the conditions in use, so the database walks
// the index by (job, started_at) backwards and stops at the limit. past is
// the condition, and its arguments, of the rows past the cursor c, which
// each dialect spells its own way.
func RunListQuery(table string, p store.RunListParams, past func(c store.RunCursor) (string, []any)) (string, []any) {
	var w where
	if p.Job != "" {
		w.add("job = ?", p.Job)
	}
	if !p.Before.IsZero() {
		cond, args := past(p.Before)
		w.add(cond, args...)
	}
	return w.query(`SELECT `+RunColumns+` FROM `+table, `started_at DESC, id DESC`, p.EffectiveLimit())
}

// AlertListQuery is the query of Monitor.AlertList on the alerts table and
// its arguments, holding only the conditions in use.
func AlertListQuery(table string, p store.AlertListParams) (string, []any) {
	var w where
	if p.OpenOnly {
		w.add("resolved_at IS NULL")
	}
	if p.Kind != "" {
		w.add("kind = ?", string(p.Kind))
	}
	if p.Subject != "" {
		w.add("subject = ?", p.Subject)
	}
	return w.query(`SELECT `+AlertColumns+` FROM `+table, `id DESC`, p.EffectiveLimit())
}

// where gathers the conditions of a list query and their arguments.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, args ...any) {
	w.conds, w.args = append(w.conds, cond), append(w.args, args...)
}

// query is selectFrom with the conditions, in order, and limited.
func (w where) query(selectFrom, order string, limit int) (string, []any) {
	if len(w.conds) > 0 {
		selectFrom += ` WHERE ` + strings.Join(w.conds, " AND ")
	}
	return selectFrom + ` ORDER BY ` + order + ` LIMIT ?`, append(w.args, limit)
}

// Prefixed qualifies each of a comma-separated column list with prefix.
func Prefixed(prefix, columns string) string {
	parts := strings.Split(columns, ",")
	for i, c := range parts {
		parts[i] = prefix + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}
