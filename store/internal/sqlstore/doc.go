// Package sqlstore holds what the two stores on database/sql, store/mysql
// and store/sqlite, share around their SQL: the decoding of the rows of the
// tables both have (Decoder, Query) and the JSON in their columns (run logs,
// alert details, replica jobs and kinds); the instant both round to
// (Normalize); the stored schedules' statements and the order of a write
// (Schedules); the rules both apply to what their statements read and write: the defaults of
// a run row (RunRow), the part of a claim's gate that the slot's row decides
// (Refusal), what an overlap or a pause records (MayBuffer, OverlapSkipRun,
// PausedSkipRun), the run row a finish writes (FinishArgs, FinishedRun); the
// list queries whose text both dialects share (RunListQuery, AlertListQuery);
// and the errors both return (Error).
//
// Each store keeps what differs: its SQL, its transactions (InnoDB row
// locks and retries on MySQL, one immediate transaction behind a write
// lock on SQLite), its clock and how it keeps an instant in a column
// (DATETIME(6), or INTEGER Unix microseconds), which it hands the Decoder.
// The functions here take what a store read and return what it writes, or
// run statements in a transaction the store began (Schedules); none of
// them begins, commits or retries a transaction.
package sqlstore
