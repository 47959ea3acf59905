package sqlstore

import (
	"encoding/json"

	"github.com/cronfence/cronfence/store"
)

// jsonColumn is what the stores keep as JSON in a TEXT or JSON column: run
// logs, alert details, replica jobs and kinds.
type jsonColumn interface {
	[]string | map[string]string | []store.ReplicaJob
}

// encodeJSON is v as its column holds it: empty (the column's empty value,
// '[]' or '{}') when v has nothing.
func encodeJSON[T jsonColumn](v T, empty string) (string, error) {
	if len(v) == 0 {
		return empty, nil
	}
	text, err := json.Marshal(v)
	return string(text), err
}

// decodeJSON reads a column into v, nil when it holds nothing: as
// Run.Bounded leaves an empty log, so the stores hand out empty details and
// jobs.
func decodeJSON[T jsonColumn](text string, v *T) error {
	if err := json.Unmarshal([]byte(text), v); err != nil {
		return err
	}
	if len(*v) == 0 {
		var none T
		*v = none
	}
	return nil
}

// DetailsJSON is an alert's details as their column holds them.
func DetailsJSON(details map[string]string) (string, error) { return encodeJSON(details, "{}") }

// JobsJSON is a replica's jobs as their column holds them.
func JobsJSON(jobs []store.ReplicaJob) (string, error) { return encodeJSON(jobs, "[]") }

// KindsJSON is a replica's handler kinds as their column holds them.
func KindsJSON(kinds []string) (string, error) { return encodeJSON(kinds, "[]") }
