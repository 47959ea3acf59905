package store

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestValidateName(t *testing.T) {
	for _, tc := range []struct {
		name    string
		wantErr string // empty: valid
	}{
		{"nightly-report", ""},
		{"fechamento/2026-09-25/loja-42", ""},
		{"☃ unicode ☃", ""},
		{`robert'); DROP TABLE leases;--`, ""},
		{strings.Repeat("x", MaxNameLength), ""},
		{"", "must not be empty"},
		{strings.Repeat("x", MaxNameLength+1), "at most 200 bytes, got 201"},
		{"a\x00b", "NUL"},
		{"a\xffb", "UTF-8"},
	} {
		err := ValidateName("job", tc.name)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("ValidateName(%q) = %v, want valid", tc.name, err)
		case tc.wantErr != "" && (!errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "job")):
			t.Errorf("ValidateName(%q) = %v, want an ErrInvalidArgument naming the job and saying %q", tc.name, err, tc.wantErr)
		}
	}
}

func TestValidateTTL(t *testing.T) {
	for _, tc := range []struct {
		ttl time.Duration
		ok  bool
	}{
		{MinTTL, true}, {90 * time.Second, true}, {MaxTTL, true},
		{0, false}, {-time.Second, false}, {MinTTL - 1, false}, {MaxTTL + 1, false},
	} {
		if err := ValidateTTL(tc.ttl); (err == nil) != tc.ok {
			t.Errorf("ValidateTTL(%s) = %v, want ok %v", tc.ttl, err, tc.ok)
		}
	}
}

func TestRunBounded(t *testing.T) {
	t.Run("small run unchanged", func(t *testing.T) {
		r := Run{Job: "j", Logs: []string{"a", "b"}, Error: "e"}.Bounded()
		if len(r.Logs) != 2 || r.Logs[0] != "a" || r.Error != "e" {
			t.Fatalf("Bounded changed a small run: %+v", r)
		}
		if (Run{Logs: []string{}}).Bounded().Logs != nil {
			t.Fatal("empty logs should become nil")
		}
	})
	t.Run("too many lines keeps the newest", func(t *testing.T) {
		logs := make([]string, MaxRunLogLines*2)
		for i := range logs {
			logs[i] = fmt.Sprint(i)
		}
		r := Run{Logs: logs}.Bounded()
		if len(r.Logs) != MaxRunLogLines || r.Logs[len(r.Logs)-1] != logs[len(logs)-1] {
			t.Fatalf("kept %d lines ending %q", len(r.Logs), r.Logs[len(r.Logs)-1])
		}
		if want := fmt.Sprintf("… %d earlier log lines dropped", MaxRunLogLines+1); r.Logs[0] != want {
			t.Fatalf("marker = %q, want %q", r.Logs[0], want)
		}
	})
	t.Run("too many bytes", func(t *testing.T) {
		line := strings.Repeat("y", 1000)
		logs := make([]string, 200) // 200 KB in all
		for i := range logs {
			logs[i] = line
		}
		r := Run{Logs: logs}.Bounded()
		size := 0
		for _, l := range r.Logs {
			size += len(l)
		}
		if size > MaxRunLogBytes {
			t.Fatalf("kept %d bytes of logs, bound is %d", size, MaxRunLogBytes)
		}
	})
	t.Run("long line and error cut on rune boundaries", func(t *testing.T) {
		r := Run{Logs: []string{strings.Repeat("é", MaxRunLogBytes)}, Error: strings.Repeat("é", MaxRunErrorBytes)}.Bounded()
		if len(r.Error) > MaxRunErrorBytes || !utf8.ValidString(r.Error) {
			t.Fatalf("error is %d bytes, valid UTF-8 %v", len(r.Error), utf8.ValidString(r.Error))
		}
		if len(r.Logs[0]) > MaxRunLogBytes/4+64 || !utf8.ValidString(r.Logs[0]) {
			t.Fatalf("line is %d bytes, valid UTF-8 %v", len(r.Logs[0]), utf8.ValidString(r.Logs[0]))
		}
	})
}

func TestSchemaVersionError(t *testing.T) {
	newer := &SchemaVersionError{Database: 3, Binary: 2}
	if !errors.Is(newer, ErrSchemaTooNew) || errors.Is(newer, ErrSchemaOutdated) || !strings.Contains(newer.Error(), "upgrade cronfence") {
		t.Fatalf("newer schema error: %v", newer)
	}
	older := &SchemaVersionError{Database: 0, Binary: 2}
	if !errors.Is(older, ErrSchemaOutdated) || !strings.Contains(older.Error(), "cronfence migrate") {
		t.Fatalf("older schema error: %v", older)
	}
}
