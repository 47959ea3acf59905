package schemafile

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

func TestParse(t *testing.T) {
	t.Parallel()
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	tests := []struct {
		name    string
		fsys    fstest.MapFS
		wantErr string
	}{
		{name: "ok", fsys: fstest.MapFS{
			"m/001_a.up.sql": file("A"), "m/001_a.down.sql": file(""),
			"m/002_b.up.sql": file("B"), "m/002_b.down.sql": file(""),
		}},
		{name: "gap", fsys: fstest.MapFS{
			"m/001_a.up.sql": file("A"), "m/001_a.down.sql": file(""),
			"m/003_c.up.sql": file("C"), "m/003_c.down.sql": file(""),
		}, wantErr: "want version 2"},
		{name: "no down", fsys: fstest.MapFS{"m/001_a.up.sql": file("A")}, wantErr: "no down file"},
		{name: "bad name", fsys: fstest.MapFS{"m/one.up.sql": file("A")}, wantErr: "NNN_name"},
		{name: "none", fsys: fstest.MapFS{}, wantErr: "no migrations"},
	}
	for _, tt := range tests {
		ms, err := Parse(tt.fsys, "m")
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err = %v, want one containing %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || len(ms) != 2 || ms[0].Version != 1 || ms[0].Base != "001_a" || ms[1].Up != "B" {
			t.Errorf("%s: got %+v, %v", tt.name, ms, err)
		}
	}
}

func TestTables(t *testing.T) {
	t.Parallel()
	stmt := regexp.MustCompile(`(?i)\b(CREATE|DROP)\s+TABLE\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?(\w+)`)
	files := []File{
		{Version: 1, Up: "CREATE TABLE a (x INT); create table if not exists b (y INT);"},
		{Version: 2, Up: "DROP TABLE a; CREATE TABLE c (z INT);"},
	}
	for _, tt := range []struct {
		version int
		want    []string
	}{{0, nil}, {1, []string{"a", "b"}}, {2, []string{"b", "c"}}, {9, []string{"b", "c"}}} {
		if got := Tables(files, tt.version, stmt); !slices.Equal(got, tt.want) {
			t.Errorf("Tables(%d) = %v, want %v", tt.version, got, tt.want)
		}
	}
}
