package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cronfence/cronfence/schedule"
	"github.com/cronfence/cronfence/store"
	"go.yaml.in/yaml/v3"
)

// decoder walks the YAML node tree, collecting every problem.
type decoder struct {
	name   string
	dir    string
	lookup func(string) (string, bool)
	errs   []*Error
	// reads is what the command reads; unset are the variables not set,
	// reported by requireUnset for the values it reads.
	reads Reads
	unset []unsetVar
	// job is the index of the job being decoded, -1 outside jobs:, and
	// jobNames the names of those decoded.
	job      int
	jobNames []string

	// bounds are the durations the retention must exceed (checkRetention),
	// and retentionAt is history.retention as written.
	bounds      []bound
	retentionAt opt[time.Duration]
}

// Known keys, in the order messages list them.
var (
	fileKeys  = []string{"database", "sqlite", "tokens", "defaults", "jobs", "exclude", "kinds", "schedules", "webhook", "monitor", "history"}
	tokenKeys = []string{"name", "role", "token"}
	// jobFieldKeys are the fields defaults: may set too.
	jobFieldKeys = []string{"schedule", "time_zone", "env", "workdir", "timeout", "lease_ttl",
		"catch_up", "catch_up_window", "max_catch_up", "jitter", "exclude", "overlap", "max_attempts", "retry_backoff", "deadline", "enabled", "run_when_store_down", "completes_in_tx"}
	jobKeys = append([]string{"name", "command", "shell"}, jobFieldKeys...)
)

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func (d *decoder) file(data []byte) *File {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.errorf(0, "", "empty file; expected a mapping with jobs:")
			return nil
		}
		d.yamlError(err, data)
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		d.errorf(extra.Line, "", "more than one YAML document; put everything in one")
		return nil
	} else if !errors.Is(err, io.EOF) {
		d.yamlError(err, data)
		return nil
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			d.errorf(0, "", "empty file; expected a mapping with jobs:")
			return nil
		}
		root = root.Content[0]
	}
	f := &File{Path: d.name, Dir: d.dir, Monitor: defaultMonitor(), History: defaultHistory()}
	if isNull(root) {
		d.errorf(root.Line, "", "empty file; expected a mapping with jobs:")
		return nil
	}
	var defaults fields
	var jobs, tokens, kinds *yaml.Node
	sqlite := ""
	sqliteLine, databaseLine := 0, 0
	d.mapping(root, "", fileKeys, func(key string, k, v *yaml.Node) {
		switch key {
		case "database":
			f.Database, _ = d.str(v, key)
			databaseLine = v.Line
		case "sqlite":
			if s, ok := d.str(v, key); ok {
				if s == "" {
					d.errorf(v.Line, key, "must not be empty; leave it out for %s beside the config", DefaultSQLiteFile)
				}
				sqlite, sqliteLine = s, v.Line
			}
		case "tokens":
			tokens = v
		case "defaults":
			defaults = d.fields(v, "defaults", jobFieldKeys)
		case "jobs":
			jobs = v
		case "exclude":
			if x, ok := d.exclude(v, key); ok {
				if _, err := schedule.ParseExclusions(x, time.UTC); err != nil {
					d.errorf(v.Line, key, "%s", strings.TrimPrefix(err.Error(), "schedule: "))
				}
				f.Exclude = x
			}
		case "kinds":
			kinds = v
		case "schedules":
			f.Schedules = d.schedules(v)
		case "webhook":
			f.Webhook = d.webhook(k, v)
		case "monitor":
			f.Monitor = d.monitor(k, v)
		case "history":
			f.History = d.history(k, v)
		}
	})
	if f.Monitor.Line == 0 { // no monitor: (d.monitor records its own)
		d.boundReplicaStale(f.Monitor, opt[time.Duration]{}, opt[time.Duration]{})
	}
	if f.Database != "" {
		d.database(f.Database, databaseLine)
		if sqlite != "" {
			d.errorf(sqliteLine, "sqlite", "set database or sqlite, not both")
		}
	}
	f.SQLitePath = filepath.Join(d.dir, DefaultSQLiteFile)
	if sqlite != "" {
		f.SQLitePath = d.path(sqlite)
	}
	f.Tokens = d.tokens(tokens)
	f.Jobs = d.jobs(jobs, defaults)
	f.Kinds = d.kinds(kinds)
	d.checkRetention(f.History)
	d.requireUnset()
	return f
}

func (d *decoder) yamlError(err error, data []byte) {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		for _, e := range te.Errors {
			d.yamlError(errors.New(e), data)
		}
		return
	}
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		d.errorf(brokenLine(data, msg), "", "YAML: %s", m[2])
		return
	}
	line := badCharLine(data)
	if line == 0 {
		line = brokenLine(data, msg)
	}
	d.errorf(line, "", "YAML: %s", strings.TrimPrefix(msg, "yaml: "))
}

// brokenLine is the line where data stops being the YAML whose decoding
// failed with msg. yaml.v3's "line N" is that of the collection the
// problem was found in (for a parser error, counted from 0), not that of
// the problem: a key indented one space too few on line 40 is "line 2",
// the start of jobs:. The problem's line is the first whose prefix of
// data fails as the whole does: a document cut at a line end is still
// YAML up to the problem (its open collections end with it), and the
// problem found on a line is found again in any longer prefix. Found by
// bisection, so a file is parsed a few times more, once it is broken.
func brokenLine(data []byte, msg string) int {
	var ends []int // the offset after each line
	for i, b := range data {
		if b == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] != len(data) {
		ends = append(ends, len(data))
	}
	fails := func(lines int) bool {
		err := yamlProblem(data[:ends[lines-1]])
		return err != nil && err.Error() == msg
	}
	lo, hi := 1, len(ends) // fails(hi) holds: the whole is data
	for lo < hi {
		mid := lo + (hi-lo)/2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// yamlProblem returns the error reading data as one YAML document gives,
// as file reads it, or nil.
func yamlProblem(data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc, extra yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	if err := dec.Decode(&extra); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// badCharLine is the line of the first character YAML does not allow, 0
// when there is none: yaml.v3's reader reports control characters and bad
// UTF-8 with an offset at most, and no line.
func badCharLine(data []byte) int {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		allowed := r == '\t' || r == '\n' || r == '\r' || (r >= 0x20 && r <= 0x7E) || r == 0x85 ||
			(r >= 0xA0 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD && (r != 0xFEFF || i == 0)) || r >= 0x10000
		if (r == utf8.RuneError && size == 1) || !allowed {
			return bytes.Count(data[:i], []byte("\n")) + 1
		}
		i += size
	}
	return 0
}

// databaseSchemes are the URL schemes --database takes: PostgreSQL's and
// MySQL's (store/mysql.IsURL).
var databaseSchemes = []string{"postgres", "postgresql", "mysql", "mariadb"}

// database checks the URL s given on line by the rule --database follows.
func (d *decoder) database(s string, line int) {
	if !strings.Contains(s, "://") {
		return // a PostgreSQL key=value connection string; the driver checks it
	}
	u, err := url.Parse(s)
	if err != nil {
		d.errorf(line, "database", "not a URL: %s", errors.Unwrap(err))
		return
	}
	if !slices.Contains(databaseSchemes, u.Scheme) {
		d.errorf(line, "database", "scheme %q: must be postgres:// or postgresql:// (PostgreSQL), or mysql:// or mariadb:// (MySQL, MariaDB)", u.Scheme)
	}
}

// path resolves p against the config's directory.
func (d *decoder) path(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(d.dir, p)
}

// deref follows an alias: anchors and aliases are refused, so the walk
// stays linear in the file's size.
func (d *decoder) deref(n *yaml.Node, path string) *yaml.Node {
	if n.Kind == yaml.AliasNode {
		d.errorf(n.Line, path, "YAML aliases (*name) are not supported; use defaults:")
		return nil
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// mapping calls fn for each known key of n, in order, reporting unknown and
// repeated keys and a non-mapping n. Null values are skipped.
func (d *decoder) mapping(n *yaml.Node, path string, known []string, fn func(key string, k, v *yaml.Node)) bool {
	if n = d.deref(n, path); n == nil {
		return false
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(n.Line, path, "must be a mapping (key: value), got %s", kind(n))
		return false
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		kp := join(path, k.Value)
		if k.Kind != yaml.ScalarNode {
			d.errorf(k.Line, path, "keys must be plain words, got %s", kind(k))
			continue
		}
		if k.Value == "<<" {
			d.errorf(k.Line, kp, "YAML merge keys are not supported; use defaults:")
			continue
		}
		if !slices.Contains(known, k.Value) {
			d.errorf(k.Line, kp, "unknown field; expected one of %s", strings.Join(known, ", "))
			continue
		}
		if first, ok := seen[k.Value]; ok {
			d.errorf(k.Line, kp, "repeated (first on line %d)", first)
			continue
		}
		seen[k.Value] = k.Line
		if v = d.deref(v, kp); v == nil || isNull(v) {
			continue
		}
		fn(k.Value, k, v)
	}
	return true
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func kind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	switch n.Tag {
	case "!!int", "!!float":
		return "the number " + n.Value
	case "!!bool":
		return "the boolean " + n.Value
	case "!!null":
		return "null"
	}
	return strconv.Quote(truncate(n.Value))
}

// scalar returns n's text with variables expanded, or "" and false when a
// variable cannot be: an unset one is kept aside for requireUnset, which
// knows what the command reads.
func (d *decoder) scalar(n *yaml.Node, path string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		d.errorf(n.Line, path, "must be a single value, got %s", kind(n))
		return "", false
	}
	s, problems := expand(n.Value, d.lookup)
	for _, p := range problems {
		if p.unset {
			d.unset = append(d.unset, unsetVar{err: &Error{File: d.name, Line: n.Line, Path: path, Msg: p.msg}, job: d.job})
			continue
		}
		d.errorf(n.Line, path, "%s", p.msg)
	}
	if len(problems) > 0 {
		return "", false
	}
	return s, true
}

// unsetVar is a variable that is not set, in the value at err.Path, of
// the job at index job of jobs: (-1 for none).
type unsetVar struct {
	err *Error
	job int
}

// requireUnset reports the unset variables of the values the command
// reads (d.reads); the others leave their values empty.
func (d *decoder) requireUnset() {
	for _, u := range d.unset {
		job := ""
		if u.job >= 0 && u.job < len(d.jobNames) {
			job = d.jobNames[u.job]
		}
		if d.reads.reads(u.err.Path, job) && len(d.errs) < maxErrors {
			d.errs = append(d.errs, u.err)
		}
	}
}

// str decodes a string. Numbers and booleans are refused, so a value YAML
// reads as something else is noticed.
func (d *decoder) str(n *yaml.Node, path string) (string, bool) {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!str" {
		d.errorf(n.Line, path, "must be a string, got %s; quote it", kind(n))
		return "", false
	}
	s, ok := d.scalar(n, path)
	if ok && strings.IndexByte(s, 0) >= 0 {
		d.errorf(n.Line, path, "must not contain NUL bytes")
		return "", false
	}
	return s, ok
}

// text decodes any scalar but null as its text: for argv and env values,
// where `5` and `true` mean the strings.
func (d *decoder) text(n *yaml.Node, path string) (string, bool) {
	if isNull(n) {
		d.errorf(n.Line, path, "must not be null")
		return "", false
	}
	s, ok := d.scalar(n, path)
	if ok && strings.IndexByte(s, 0) >= 0 {
		d.errorf(n.Line, path, "must not contain NUL bytes")
		return "", false
	}
	return s, ok
}

// expanded reports whether a string scalar holds a variable, so a typed
// field written as "${N}" is read from the variable's value.
func expanded(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!str" && strings.Contains(n.Value, "${")
}

func (d *decoder) duration(n *yaml.Node, path string) (time.Duration, bool) {
	if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") {
		d.errorf(n.Line, path, "%s is a bare number; write a duration with its unit, e.g. \"90s\" or \"1h30m\"", n.Value)
		return 0, false
	}
	s, ok := d.str(n, path)
	if !ok {
		return 0, false
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		d.errorf(n.Line, path, "%q is not a duration; write e.g. \"90s\" or \"1h30m\"", truncate(s))
		return 0, false
	}
	if v < 0 {
		d.errorf(n.Line, path, "%q must not be negative", s)
		return 0, false
	}
	return v, true
}

func (d *decoder) integer(n *yaml.Node, path string) (int, bool) {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && !expanded(n)) {
		d.errorf(n.Line, path, "must be a whole number, got %s", kind(n))
		return 0, false
	}
	s, ok := d.scalar(n, path)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 0, 32)
	if err != nil {
		d.errorf(n.Line, path, "%q is not a whole number", truncate(s))
		return 0, false
	}
	return int(v), true
}

// intIn decodes a whole number from lo to hi (no upper bound when hi is 0).
func (d *decoder) intIn(n *yaml.Node, path string, lo, hi int) (int, bool) {
	v, ok := d.integer(n, path)
	switch {
	case !ok:
	case hi > 0 && (v < lo || v > hi):
		d.errorf(n.Line, path, "%d must be between %d and %d", v, lo, hi)
	case v < lo:
		d.errorf(n.Line, path, "%d must be at least %d", v, lo)
	default:
		return v, true
	}
	return 0, false
}

func (d *decoder) boolean(n *yaml.Node, path string) (bool, bool) {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!bool" && !expanded(n)) {
		d.errorf(n.Line, path, "must be true or false, got %s", kind(n))
		return false, false
	}
	s, ok := d.scalar(n, path)
	if !ok {
		return false, false
	}
	switch s {
	case "true", "True", "TRUE":
		return true, true
	case "false", "False", "FALSE":
		return false, true
	}
	d.errorf(n.Line, path, "%q must be true or false", truncate(s))
	return false, false
}

// opt is a field's value with where it was written.
type opt[T any] struct {
	set  bool
	v    T
	line int
	path string
}

func set[T any](v T, ok bool, n *yaml.Node, path string) opt[T] {
	if !ok {
		return opt[T]{}
	}
	return opt[T]{set: true, v: v, line: n.Line, path: path}
}

// or returns o if set, else def.
func (o opt[T]) or(def opt[T]) opt[T] {
	if o.set {
		return o
	}
	return def
}

// fields are the job fields defaults: may set too.
type fields struct {
	schedule, timeZone, workdir, overlap opt[string]
	catchUp                              opt[string]
	timeout, leaseTTL, catchUpWindow     opt[time.Duration]
	deadline, retryBackoff, jitter       opt[time.Duration]
	maxAttempts, maxCatchUp              opt[int]
	enabled, runWhenStoreDown, inTx      opt[bool]
	env                                  opt[map[string]string]
	exclude                              opt[[]string]
}

// field decodes the job field key into f.
func (d *decoder) field(f *fields, key string, v *yaml.Node, path string) {
	switch key {
	case "schedule":
		s, ok := d.str(v, path)
		if ok && strings.TrimSpace(s) == "" {
			d.errorf(v.Line, path, "must not be empty")
			ok = false
		}
		f.schedule = set(s, ok, v, path)
	case "time_zone":
		s, ok := d.str(v, path)
		if ok {
			ok = d.zone(s, v.Line, path)
		}
		f.timeZone = set(s, ok, v, path)
	case "workdir":
		s, ok := d.str(v, path)
		if ok && s == "" {
			d.errorf(v.Line, path, "must not be empty; leave it out to inherit the process's directory")
			ok = false
		}
		f.workdir = set(s, ok, v, path)
	case "overlap":
		s, ok := d.str(v, path)
		if ok && s != "skip" && s != "allow" && s != "buffer-one" {
			d.errorf(v.Line, path, "%q must be skip, allow or buffer-one", truncate(s))
			ok = false
		}
		f.overlap = set(s, ok, v, path)
	case "timeout":
		x, ok := d.duration(v, path)
		f.timeout = set(x, ok, v, path)
	case "lease_ttl":
		x, ok := d.duration(v, path)
		if ok && (x < time.Second || x > store.MaxTTL) {
			d.errorf(v.Line, path, "%q must be between 1s and %s", x, store.MaxTTL)
			ok = false
		}
		f.leaseTTL = set(x, ok, v, path)
	case "catch_up":
		s, ok := d.str(v, path)
		if ok && s != "none" && s != "latest" && s != "all" {
			d.errorf(v.Line, path, "%q must be none, latest or all", truncate(s))
			ok = false
		}
		f.catchUp = set(s, ok, v, path)
	case "catch_up_window":
		x, ok := d.duration(v, path)
		f.catchUpWindow = set(x, ok, v, path)
	case "jitter":
		x, ok := d.duration(v, path)
		f.jitter = set(x, ok, v, path)
	case "max_catch_up":
		x, ok := d.intIn(v, path, 1, store.MaxCatchUp)
		f.maxCatchUp = set(x, ok, v, path)
	case "deadline":
		x, ok := d.duration(v, path)
		f.deadline = set(x, ok, v, path)
	case "max_attempts":
		x, ok := d.intIn(v, path, 1, 0)
		f.maxAttempts = set(x, ok, v, path)
	case "retry_backoff":
		x, ok := d.duration(v, path)
		if ok && x <= 0 {
			d.errorf(v.Line, path, "%q must be positive; leave it out for %s (max_attempts: 1 turns retries off)", x, DefaultRetryBackoff)
			ok = false
		}
		f.retryBackoff = set(x, ok, v, path)
	case "enabled":
		x, ok := d.boolean(v, path)
		f.enabled = set(x, ok, v, path)
	case "run_when_store_down":
		x, ok := d.boolean(v, path)
		f.runWhenStoreDown = set(x, ok, v, path)
	case "completes_in_tx":
		x, ok := d.boolean(v, path)
		f.inTx = set(x, ok, v, path)
	case "env":
		x, ok := d.env(v, path)
		f.env = set(x, ok, v, path)
	case "exclude":
		x, ok := d.exclude(v, path)
		f.exclude = set(x, ok, v, path)
	}
}

// exclude decodes a list of exclusion entries (checked where the job's
// zone is known, in resolve).
func (d *decoder) exclude(n *yaml.Node, path string) ([]string, bool) {
	if n.Kind != yaml.SequenceNode {
		d.errorf(n.Line, path, "must be a list of ranges (FROM/TO) and calendar entries (five cron fields), e.g. [\"2026-12-24/2026-12-27\", \"* * 25 12 *\"], got %s", kind(n))
		return nil, false
	}
	out := make([]string, 0, len(n.Content))
	ok := true
	for i, e := range n.Content {
		ep := fmt.Sprintf("%s[%d]", path, i)
		if e = d.deref(e, ep); e == nil {
			ok = false
			continue
		}
		s, eok := d.str(e, ep)
		ok = ok && eok
		out = append(out, s)
	}
	return out, ok
}

func (d *decoder) fields(n *yaml.Node, path string, known []string) fields {
	var f fields
	d.mapping(n, path, known, func(key string, _, v *yaml.Node) {
		d.field(&f, key, v, join(path, key))
	})
	return f
}

// zone checks a time zone name by the rules of schedule's CRON_TZ=.
func (d *decoder) zone(s string, line int, path string) bool {
	switch s {
	case "":
		d.errorf(line, path, "must not be empty; name an IANA zone such as Europe/Lisbon")
		return false
	case "Local":
		d.errorf(line, path, "\"Local\" differs between machines; name an IANA zone such as Europe/Lisbon")
		return false
	}
	if _, err := time.LoadLocation(s); err != nil {
		d.errorf(line, path, "%q is not a time zone: %s", truncate(s), err)
		return false
	}
	return true
}

func (d *decoder) env(n *yaml.Node, path string) (map[string]string, bool) {
	m := map[string]string{}
	ok := true
	if n.Kind != yaml.MappingNode {
		d.errorf(n.Line, path, "must be a mapping (NAME: value), got %s", kind(n))
		return nil, false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := k.Value
		kp := path + "." + name
		switch {
		case k.Kind != yaml.ScalarNode || name == "" || strings.ContainsAny(name, "=\x00"):
			d.errorf(k.Line, path, "%s is not an environment variable name", kind(k))
			ok = false
			continue
		case strings.HasPrefix(name, "CRONFENCE_"):
			d.errorf(k.Line, kp, "CRONFENCE_ variables are set by cronfence for each run")
			ok = false
			continue
		}
		if _, dup := m[name]; dup {
			d.errorf(k.Line, kp, "repeated")
			ok = false
			continue
		}
		if v = d.deref(v, kp); v == nil {
			ok = false
			continue
		}
		s, vok := d.text(v, kp)
		ok = ok && vok
		m[name] = s
	}
	return m, ok
}

func (d *decoder) tokens(n *yaml.Node) []Token {
	if n == nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.errorf(n.Line, "tokens", "must be a list, got %s", kind(n))
		return nil
	}
	var out []Token
	names := map[string]string{}
	secrets := map[string]string{}
	for i, tn := range n.Content {
		path := fmt.Sprintf("tokens[%d]", i)
		var t Token
		var nameSet, roleSet, tokenSet bool
		if !d.mapping(tn, path, tokenKeys, func(key string, _, v *yaml.Node) {
			kp := join(path, key)
			s, ok := d.str(v, kp)
			if !ok {
				// Counted as set: its problem is reported already.
				nameSet, roleSet, tokenSet = nameSet || key == "name", roleSet || key == "role", tokenSet || key == "token"
				return
			}
			switch key {
			case "name":
				nameSet = true
				t.Name = s
				if err := store.ValidateName("name", s); err != nil {
					d.errorf(v.Line, kp, "%s", storeMessage(err))
				} else if first, dup := names[s]; dup {
					d.errorf(v.Line, kp, "%q is already the name of %s", truncate(s), first)
				} else {
					names[s] = path
				}
			case "role":
				roleSet = true
				t.Role = s
				if s != RoleAdmin && s != RoleRead {
					d.errorf(v.Line, kp, "%q must be admin or read", truncate(s))
				}
			case "token":
				tokenSet = true
				t.Token = s
				if s == "" {
					d.errorf(v.Line, kp, "must not be empty")
				} else if first, dup := secrets[s]; dup {
					d.errorf(v.Line, kp, "same token as %s; each token must be distinct", first)
				} else {
					secrets[s] = path
				}
			}
		}) {
			continue
		}
		t.Line = tn.Line
		for _, m := range []struct {
			set  bool
			name string
		}{{nameSet, "name"}, {roleSet, "role"}, {tokenSet, "token"}} {
			if !m.set {
				d.errorf(tn.Line, path, "%s is required", m.name)
			}
		}
		out = append(out, t)
	}
	return out
}

// storeMessage strips the store's prefix and sentinel from a validation
// error.
func storeMessage(err error) string {
	s := strings.TrimPrefix(err.Error(), "store: ")
	return strings.TrimSuffix(s, ": "+store.ErrInvalidArgument.Error())
}

func (d *decoder) jobs(n *yaml.Node, defaults fields) []Job {
	if n == nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.errorf(n.Line, "jobs", "must be a list, got %s", kind(n))
		return nil
	}
	var out []Job
	names := map[string]string{}
	d.jobNames = make([]string, len(n.Content))
	defer func() { d.job = -1 }()
	for i, jn := range n.Content {
		d.job = i
		path := fmt.Sprintf("jobs[%d]", i)
		var own fields
		var name, shell opt[string]
		var command opt[[]string]
		var nameSeen, commandSeen, shellSeen bool
		if !d.mapping(jn, path, jobKeys, func(key string, _, v *yaml.Node) {
			kp := join(path, key)
			switch key {
			case "name":
				nameSeen = true
				s, ok := d.str(v, kp)
				if ok {
					if len(s) > MaxJobNameLength { // the shorter limit first
						d.errorf(v.Line, kp, "must be at most %d bytes, got %d", MaxJobNameLength, len(s))
						ok = false
					} else if err := store.ValidateName("name", s); err != nil {
						d.errorf(v.Line, kp, "%s", storeMessage(err))
						ok = false
					} else if first, dup := names[s]; dup {
						d.errorf(v.Line, kp, "%q is already the name of %s", s, first)
						ok = false
					} else {
						names[s] = path
					}
				}
				name = set(s, ok, v, kp)
				d.jobNames[i] = s
			case "shell":
				shellSeen = true
				s, ok := d.str(v, kp)
				if ok && strings.TrimSpace(s) == "" {
					d.errorf(v.Line, kp, "must not be empty")
					ok = false
				}
				shell = set(s, ok, v, kp)
			case "command":
				commandSeen = true
				argv, ok := d.argv(v, kp)
				command = set(argv, ok, v, kp)
			default:
				d.field(&own, key, v, kp)
			}
		}) {
			continue
		}
		if !nameSeen {
			d.errorf(jn.Line, path, "name is required")
		}
		switch {
		case commandSeen && shellSeen:
			d.errorf(jn.Line, path, "set command or shell, not both")
		case !commandSeen && !shellSeen:
			d.errorf(jn.Line, path, "command (an argv list) or shell (a script for /bin/sh -c) is required")
		}
		j := d.resolve(own, defaults, path, jn.Line)
		j.Name, j.Command, j.Shell, j.Line = name.v, command.v, shell.v, jn.Line
		out = append(out, j)
	}
	return out
}

func (d *decoder) argv(n *yaml.Node, path string) ([]string, bool) {
	if n.Kind != yaml.SequenceNode {
		d.errorf(n.Line, path, "must be a list of arguments, e.g. [\"/usr/bin/env\", \"true\"], got %s; use shell: for a script", kind(n))
		return nil, false
	}
	if len(n.Content) == 0 {
		d.errorf(n.Line, path, "must not be empty")
		return nil, false
	}
	argv := make([]string, 0, len(n.Content))
	ok := true
	for i, a := range n.Content {
		ap := fmt.Sprintf("%s[%d]", path, i)
		if a = d.deref(a, ap); a == nil {
			ok = false
			continue
		}
		s, aok := d.text(a, ap)
		if aok && i == 0 && s == "" {
			d.errorf(a.Line, ap, "the program must not be empty")
			aok = false
		}
		ok = ok && aok
		argv = append(argv, s)
	}
	return argv, ok
}

// resolve merges a job's fields over the defaults, applies the package
// defaults and checks what depends on several fields.
func (d *decoder) resolve(own, def fields, path string, line int) Job {
	f := fields{
		schedule: own.schedule.or(def.schedule), timeZone: own.timeZone.or(def.timeZone),
		workdir: own.workdir.or(def.workdir), overlap: own.overlap.or(def.overlap),
		timeout: own.timeout.or(def.timeout), leaseTTL: own.leaseTTL.or(def.leaseTTL),
		catchUp: own.catchUp.or(def.catchUp), catchUpWindow: own.catchUpWindow.or(def.catchUpWindow),
		maxCatchUp: own.maxCatchUp.or(def.maxCatchUp), deadline: own.deadline.or(def.deadline), jitter: own.jitter.or(def.jitter),
		exclude:     own.exclude.or(def.exclude),
		maxAttempts: own.maxAttempts.or(def.maxAttempts), retryBackoff: own.retryBackoff.or(def.retryBackoff),
		enabled:          own.enabled.or(def.enabled),
		runWhenStoreDown: own.runWhenStoreDown.or(def.runWhenStoreDown), inTx: own.inTx.or(def.inTx),
	}
	j := Job{
		Schedule: f.schedule.v, TimeZone: DefaultTimeZone, Timeout: f.timeout.v,
		LeaseTTL: DefaultLeaseTTL, CatchUpWindow: f.catchUpWindow.v, Overlap: DefaultOverlap,
		Deadline: f.deadline.v, MaxAttempts: DefaultMaxAttempts, RetryBackoff: DefaultRetryBackoff, Disabled: f.enabled.set && !f.enabled.v,
		RunWhenStoreDown: f.runWhenStoreDown.v, CompletesInTx: f.inTx.v, Env: map[string]string{}, Jitter: f.jitter.v,
		Exclude: f.exclude.v,
	}
	if f.timeZone.set {
		j.TimeZone = f.timeZone.v
	}
	if f.leaseTTL.set {
		j.LeaseTTL = f.leaseTTL.v
	}
	if f.overlap.set {
		j.Overlap = f.overlap.v
	}
	if f.maxAttempts.set {
		j.MaxAttempts = f.maxAttempts.v
	}
	if f.retryBackoff.set {
		j.RetryBackoff = f.retryBackoff.v
	}
	if f.workdir.set {
		j.Workdir = d.path(f.workdir.v)
	}
	j.CatchUp, j.CatchUpWindow, j.MaxCatchUp = d.catchUp(own, f)
	d.boundJob(f, j.CatchUp)
	for k, v := range def.env.v {
		j.Env[k] = v
	}
	for k, v := range own.env.v {
		j.Env[k] = v
	}
	if !f.schedule.set {
		// A schedule that failed to decode is reported already.
		if !own.schedule.set && !def.schedule.set && !d.reported(path+".schedule") && !d.reported("defaults.schedule") {
			d.errorf(line, path, "schedule is required")
		}
		return j
	}
	loc := time.UTC
	if f.timeZone.set {
		loc, _ = time.LoadLocation(f.timeZone.v) // checked when decoded
	}
	if _, err := schedule.Parse(j.Schedule, &schedule.Options{Location: loc}); err != nil {
		d.errorf(f.schedule.line, f.schedule.path, "%s", strings.TrimPrefix(err.Error(), "schedule: "))
	}
	if f.exclude.set {
		if _, err := schedule.ParseExclusions(j.Exclude, loc); err != nil {
			d.errorf(f.exclude.line, f.exclude.path, "%s", strings.TrimPrefix(err.Error(), "schedule: "))
		}
	}
	return j
}

// catchUp resolves a job's catch-up settings, f, merged from the job's
// own (own) over the defaults: the policy (latest when a window is set,
// none otherwise), the window and MaxCatchUp (zero unless the policy is
// all: the library's default then applies). A window the defaults give is
// dropped by a job whose own policy is none.
func (d *decoder) catchUp(own, f fields) (policy string, window time.Duration, maxCatchUp int) {
	policy, window = f.catchUp.v, f.catchUpWindow.v
	if !f.catchUp.set {
		policy = "none"
		if window > 0 {
			policy = "latest"
		}
	}
	switch {
	case policy == "none" && window > 0 && own.catchUpWindow.set:
		d.errorf(f.catchUpWindow.line, f.catchUpWindow.path, "%s is set but catch_up is none (line %d): no missed slot runs; drop one", window, f.catchUp.line)
	case policy == "none":
		window = 0
	case window == 0 && !d.reported(f.catchUpWindow.path):
		d.errorf(f.catchUp.line, f.catchUp.path, "%s needs catch_up_window: how late a missed slot still runs", policy)
	}
	if f.maxCatchUp.set && policy != "all" {
		d.errorf(f.maxCatchUp.line, f.maxCatchUp.path, "applies only to catch_up: all, not %s", policy)
	}
	if policy == "all" {
		maxCatchUp = f.maxCatchUp.v
	}
	return policy, window, maxCatchUp
}

// reported says whether a problem was reported for path, or its value
// holds a variable that is not set (reported or not, as the command reads
// it or not).
func (d *decoder) reported(path string) bool {
	for _, e := range d.errs {
		if e.Path == path {
			return true
		}
	}
	for _, u := range d.unset {
		if u.err.Path == path {
			return true
		}
	}
	return false
}
