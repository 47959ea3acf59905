package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A hostile job name in the YAML file is either loaded byte for byte or
// refused with an error naming the file, the line and jobs[i].name.
func TestHostileJobNamesYAML(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		label, name string
		ok          bool
		want        string // in the error when refused
	}{
		{"quotes", `it's a "quoted" \name\`, true, ""},
		{"sql", `'; DROP TABLE cronfence_runs; --`, true, ""},
		{"newlines", "line1\nline2", true, ""},
		{"rtl", "\u202Eevil\u202C\u200F", true, ""},
		{"emoji", "⏰ backup 🚀👩‍👩‍👧", true, ""},
		{"combining", "e\u0301\u0301\u0301", true, ""},
		{"dotdot", "../../etc/passwd", true, ""},
		{"escaped-slash", "a%2Fb", true, ""},
		{"yaml-ish", "- [a]: {b} # c &d *e !f", true, ""},
		{"max-length", strings.Repeat("é", MaxJobNameLength/2), true, ""},
		{"nul", "a\x00b", false, "NUL"},
		{"empty", "", false, "empty"},
		{"over-max", strings.Repeat("é", MaxJobNameLength/2) + "x", false, "at most 150 bytes"},
		{"10KB", strings.Repeat("x", 10<<10), false, "at most 150 bytes"},
	} {
		t.Run(tc.label, func(t *testing.T) {
			t.Parallel()
			quoted, _ := json.Marshal(tc.name) // JSON's escapes are YAML's
			path := filepath.Join(t.TempDir(), "cronfence.yaml")
			data := "# hostile\njobs:\n  - schedule: '@daily'\n    shell: 'true'\n    name: " + string(quoted) + "\n"
			if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := Load(path)
			if tc.ok {
				if err != nil || len(f.Jobs) != 1 || f.Jobs[0].Name != tc.name {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			var ce *Error
			if f != nil || !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), path+":5: jobs[0].name: ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load: %v, want %s:5: jobs[0].name: …%s…", err, path, tc.want)
			}
		})
	}
	// Bytes that are not UTF-8 cannot be YAML: refused naming the line.
	path := filepath.Join(t.TempDir(), "cronfence.yaml")
	if err := os.WriteFile(path, []byte("jobs:\n  - schedule: '@daily'\n    shell: 'true'\n    name: \xff\xfe\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.HasPrefix(err.Error(), path+":4: ") {
		t.Fatalf("Load of a name that is not UTF-8: %v, want an error at line 4", err)
	}
}
