package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// referencePath is the configuration reference, from this directory.
var referencePath = filepath.Join("..", "..", "..", "..", "docs", "config.md")

// The reference lists every key the decoder knows, and no key it does not
// (a stale entry). The keys are not written down here: decoderKeys asks the
// decoder, so a key added to any section, or a new section, is found
// without touching this test.
func TestReferenceListsEveryKey(t *testing.T) {
	t.Parallel()
	known := decoderKeys(t)
	// A guard on the probe itself: were the decoder's message for an
	// unknown field to change, every section would look empty.
	for _, k := range []string{"jobs", "jobs[].schedule", "defaults.timeout", "tokens[].role", "webhook.url", "monitor.check_every", "history.retention"} {
		if !slices.Contains(known, k) {
			t.Fatalf("the decoder does not seem to know %s; is its unknown-field message still %q? found %q", k, unknownField, known)
		}
	}
	data, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	listed, problems := referenceKeys(string(data))
	for _, p := range problems {
		t.Errorf("docs/config.md: %s", p)
	}
	for _, k := range known {
		if !slices.Contains(listed, k) {
			t.Errorf("docs/config.md has no row for %s, which the decoder accepts: add it to the table of its section", k)
		}
	}
	for _, k := range listed {
		if !slices.Contains(known, k) {
			t.Errorf("docs/config.md lists %s, which the decoder does not accept (a stale entry)", k)
		}
	}
}

// The reference's example is a valid file. Its variables stand for
// themselves (distinct, so its two tokens differ).
func TestReferenceExampleParses(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "\n## Example\n")
	if ok {
		_, rest, ok = strings.Cut(rest, "```yaml\n")
	}
	example, _, closed := strings.Cut(rest, "\n```")
	if !ok || !closed {
		t.Fatal("docs/config.md has no ```yaml block under ## Example")
	}
	f, err := parse([]byte(example), "/etc/cronfence/cronfence.yaml", func(name string) (string, bool) { return name, true }, Everything)
	if err != nil {
		t.Fatalf("the example does not load:\n%v", err)
	}
	if len(f.Jobs) == 0 || f.Webhook == nil || f.History.Line == 0 || f.Monitor.Line == 0 {
		t.Fatalf("the example should show jobs, webhook:, monitor: and history:, got %+v", f)
	}
}

// The reference's parser finds what the test must catch.
func TestReferenceKeysParser(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, doc string
		keys      []string
		problems  int
	}{
		{"one table", "| Key | Type | Default | Meaning |\n|---|---|---|---|\n| `a` | string | none | it |\n| `b.c`, `d.c` | int | 1 | x |\n",
			[]string{"a", "b.c", "d.c"}, 0},
		{"other tables ignored", "| Variable | Meaning |\n|---|---|\n| `CRONFENCE_JOB` | the job |\n", nil, 0},
		{"text ignored", "Write `monitor.check_every` in prose.\n", nil, 0},
		{"empty meaning", "| Key | Type | Default | Meaning |\n|---|---|---|---|\n| `a` | string | none |  |\n", []string{"a"}, 1},
		{"no path", "| Key | Type | Default | Meaning |\n|---|---|---|---|\n| a | string | none | it |\n", nil, 1},
		{"listed twice", "| Key | Type | Default | Meaning |\n|---|---|---|---|\n| `a` | s | n | m |\n\n| Key | Type | Default | Meaning |\n|---|---|---|---|\n| `a` | s | n | m |\n",
			[]string{"a", "a"}, 1},
		{"escaped pipe", "| Key | Type | Default | Meaning |\n|---|---|---|---|\n| `a` | `x \\| y` | n | m |\n", []string{"a"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			keys, problems := referenceKeys(tc.doc)
			if !slices.Equal(keys, tc.keys) || len(problems) != tc.problems {
				t.Fatalf("keys %q, problems %q; want keys %q and %d problems", keys, problems, tc.keys, tc.problems)
			}
		})
	}
}

// unknownField starts the decoder's message for a key it does not know,
// followed by the keys it does (decoder.mapping).
const unknownField = "unknown field; expected one of "

// probeKey is a key no section knows.
const probeKey = "cronfence_reference_probe"

// segment is one step of a path: a mapping's key, and whether its value is
// a list of mappings (jobs, tokens) rather than a mapping.
type segment struct {
	key  string
	list bool
}

// decoderKeys returns every key the decoder accepts, in the reference's
// form: dotted paths, "[]" after a list ("jobs[].timeout"). It asks the
// decoder what each mapping accepts by giving it probeKey there and reading
// the keys its unknown-field problem lists; a key whose value, given as a
// mapping or as a list of mappings, draws no such problem is a leaf (a
// value, or a map of free names such as env and headers).
func decoderKeys(t *testing.T) []string {
	t.Helper()
	var out []string
	var walk func(path []segment)
	walk = func(path []segment) {
		keys, ok := probe(t, path)
		if !ok {
			return
		}
		for _, k := range keys {
			out = append(out, docPath(append(slices.Clone(path), segment{key: k})))
			for _, list := range []bool{false, true} {
				child := append(slices.Clone(path), segment{key: k, list: list})
				if _, ok := probe(t, child); ok {
					walk(child)
					break
				}
			}
		}
	}
	walk(nil)
	slices.Sort(out)
	return out
}

// probe parses a file holding probeKey at path and returns the keys the
// decoder says it expects there, and false when it does not complain of an
// unknown field there (path is no keyed mapping).
func probe(t *testing.T, path []segment) ([]string, bool) {
	t.Helper()
	// Flow style nests without indentation: {jobs: [{timeout: {probe: 1}}]}.
	src := "{" + probeKey + ": 1}"
	errPath := probeKey
	for i := len(path) - 1; i >= 0; i-- {
		s := path[i]
		if s.list {
			src = "[" + src + "]"
		}
		src = "{" + s.key + ": " + src + "}"
	}
	for i := len(path) - 1; i >= 0; i-- {
		s := path[i]
		if s.list {
			errPath = "[0]." + errPath
		} else {
			errPath = "." + errPath
		}
		errPath = s.key + errPath
	}
	_, err := parseTest(t, src)
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) {
		return nil, false
	}
	for _, e := range joined.Unwrap() {
		var ce *Error
		if errors.As(e, &ce) && ce.Path == errPath {
			if rest, ok := strings.CutPrefix(ce.Msg, unknownField); ok {
				return strings.Split(rest, ", "), true
			}
		}
	}
	return nil, false
}

// docPath writes path as the reference does.
func docPath(path []segment) string {
	var b strings.Builder
	for i, s := range path {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.key)
		if s.list && i < len(path)-1 {
			b.WriteString("[]")
		}
	}
	return b.String()
}

var (
	codeSpan = regexp.MustCompile("`([^`]+)`")
	keyPath  = regexp.MustCompile(`^[a-z_]+(\[\])?(\.[a-z_]+(\[\])?)*$`)
)

// referenceKeys returns the keys the reference lists, in the format its
// opening states: in every table whose header's first cell is "Key", each
// row's first cell holds the key's dotted path in backticks (or several,
// separated by commas), and the row's other three cells, Type, Default and
// Meaning, are not empty. It also returns the problems with those rows.
func referenceKeys(doc string) (keys, problems []string) {
	inKeyTable, inTable := false, false
	seen := map[string]int{}
	for n, line := range strings.Split(doc, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			inKeyTable, inTable = false, false
			continue
		}
		cells := splitRow(line)
		if !inTable { // the header
			inTable = true
			inKeyTable = len(cells) > 0 && cells[0] == "Key"
			continue
		}
		if !inKeyTable || strings.Trim(line, "|-: ") == "" {
			continue
		}
		where := fmt.Sprintf("line %d", n+1)
		spans := codeSpan.FindAllStringSubmatch(cells[0], -1)
		if len(spans) == 0 {
			problems = append(problems, fmt.Sprintf("%s: the first cell, %q, holds no `key.path`", where, cells[0]))
		}
		for _, m := range spans {
			k := m[1]
			if !keyPath.MatchString(k) {
				problems = append(problems, fmt.Sprintf("%s: %q is not a key path like jobs[].timeout", where, k))
				continue
			}
			keys = append(keys, k)
			if first, dup := seen[k]; dup {
				problems = append(problems, fmt.Sprintf("%s: %s is listed again (first on line %d)", where, k, first))
			} else {
				seen[k] = n + 1
			}
		}
		if len(cells) != 4 || slices.Contains(cells, "") {
			problems = append(problems, fmt.Sprintf("%s: want 4 non-empty cells (Key, Type, Default, Meaning), got %q", where, cells))
		}
	}
	return keys, problems
}

// splitRow returns a table row's cells, trimmed; "\|" does not split.
func splitRow(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells []string
	var cell strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cell.WriteString(`\|`)
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cell.String()))
}
