package postgres

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/store"
)

// decodeNotice is what parseNotice read every line with before its scan:
// the JSON decoder alone. The scan must read each line as it did.
func decodeNotice(line string) (store.Notice, bool) {
	var kind, job, owner string
	var us int64
	if err := json.Unmarshal([]byte(line), &[]any{&kind, &job, &us, &owner}); err != nil {
		return store.Notice{}, false
	}
	k, ok := noticeKinds[kind]
	if !ok {
		return store.Notice{}, false
	}
	n := store.Notice{Kind: k, Job: job, Owner: owner}
	if k == store.NoticeClaimed || k == store.NoticeSettled || k == store.NoticeEnded {
		n.Slot = time.UnixMicro(us).UTC()
	}
	if k == store.NoticeSchedule {
		n.Seq = us
	}
	return n, true
}

var noticeLines = []struct {
	line    string
	scanned bool // read by the scan, not the decoder
	want    store.Notice
	ok      bool
}{
	// As json_build_array writes them.
	{`["c", "job-1", 1767225600000000, "host:1:ab"]`, true,
		store.Notice{Kind: store.NoticeClaimed, Job: "job-1", Slot: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Owner: "host:1:ab"}, true},
	{`["e", "nightly", 1767225600000001, "h:2:cd"]`, true,
		store.Notice{Kind: store.NoticeEnded, Job: "nightly", Slot: time.Date(2026, 1, 1, 0, 0, 0, 1000, time.UTC), Owner: "h:2:cd"}, true},
	{`["a", null, 0, "h:2:cd"]`, false, store.Notice{Kind: store.NoticeAlive, Owner: "h:2:cd"}, true},
	{`["g","","0","x"]`, false, store.Notice{}, false}, // a string where the slot goes
	{`["d", "tenant-7", 42, ""]`, true, store.Notice{Kind: store.NoticeSchedule, Job: "tenant-7", Seq: 42}, true},
	{`["s","job",-5,"o"]`, true, store.Notice{Kind: store.NoticeSettled, Job: "job", Slot: time.UnixMicro(-5).UTC(), Owner: "o"}, true},
	// Escapes and other shapes go to the decoder.
	{`["c", "caf\u00e9 \"x\"", 1, "o"]`, false, store.Notice{Kind: store.NoticeClaimed, Job: `café "x"`, Slot: time.UnixMicro(1).UTC(), Owner: "o"}, true},
	{`["c", "j", 1e3, "o"]`, false, store.Notice{}, false},
	{`["c", "j", 01, "o"]`, false, store.Notice{}, false},
	{`["c", "j", 99999999999999999999, "o"]`, false, store.Notice{}, false},
	{`["c", "j"]`, false, store.Notice{Kind: store.NoticeClaimed, Job: "j", Slot: time.UnixMicro(0).UTC()}, true},
	// A field more (from a newer version): the decoder grows the slice.
	{`["c", "j", 1, "o", "more"]`, false, store.Notice{Kind: store.NoticeClaimed, Job: "j", Slot: time.UnixMicro(1).UTC(), Owner: "o"}, true},
	{`["x", "j", 1, "o"]`, true, store.Notice{}, false}, // a kind from a newer version
	{`["c", "j", 1, "o"] trailing`, false, store.Notice{}, false},
	{``, false, store.Notice{}, false},
	{"[\"c\", \"j\xff\", 1, \"o\"]", false, store.Notice{Kind: store.NoticeClaimed, Job: "j\ufffd", Slot: time.UnixMicro(1).UTC(), Owner: "o"}, true},
}

func TestParseNoticeReadsLinesAsTheDecoderDoes(t *testing.T) {
	for _, tc := range noticeLines {
		_, _, _, _, scanned := scanNoticeLine(tc.line)
		if scanned != tc.scanned {
			t.Errorf("%q: scanned %v, want %v", tc.line, scanned, tc.scanned)
		}
		got, ok := parseNotice(tc.line)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%q: parsed %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
		if dec, dok := decodeNotice(tc.line); dok != ok || dec != got {
			t.Errorf("%q: parsed %+v, %v; the decoder reads %+v, %v", tc.line, got, ok, dec, dok)
		}
	}
}

// FuzzNoticeLine: whatever the line, parseNotice reads it as the JSON
// decoder alone did.
func FuzzNoticeLine(f *testing.F) {
	for _, tc := range noticeLines {
		f.Add(tc.line)
	}
	f.Fuzz(func(t *testing.T, line string) {
		got, ok := parseNotice(line)
		if want, wok := decodeNotice(line); ok != wok || got != want {
			t.Fatalf("%q: parsed %+v, %v; the decoder reads %+v, %v", line, got, ok, want, wok)
		}
	})
}

// BenchmarkParseNotice is the listener's cost of a line, as every replica
// pays it for every other replica's claims and ends: scanned, and with
// the JSON decoder alone (what parseNotice did before its scan).
func BenchmarkParseNotice(b *testing.B) {
	const line = `["c", "job-1234", 1767225600000000, "replica-0:4242:9f86d081"]`
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			if _, ok := parseNotice(line); !ok {
				b.Fatal("not parsed")
			}
		}
	})
	b.Run("decoder", func(b *testing.B) {
		for b.Loop() {
			if _, ok := decodeNotice(line); !ok {
				b.Fatal("not parsed")
			}
		}
	})
}

// The notice lines the statements build by concatenation (noticeLine.sql)
// are what json_build_array wrote before, byte for byte, whatever the
// names hold: replicas of the release before read them, and read that
// form fastest.
func TestNoticeLineIsJSONBuildArraysText(t *testing.T) {
	pool := pgtest.NewPool(t)
	tmpl, err := parseStatements(`"cronfence"`, "ch")
	if err != nil {
		t.Fatal(err)
	}
	probe, err := tmpl.New("probe").Parse(`SELECT v.job, {{template "noticeLine" args "kind" "v.kind" "job" "v.job" "slot" "v.slot" "owner" "v.owner"}},
       json_build_array(v.kind, v.job, (extract(epoch FROM v.slot) * 1000000)::bigint, v.owner)::text
  FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[]) AS v(kind, job, slot, owner)`)
	if err != nil {
		t.Fatal(err)
	}
	var sql strings.Builder
	if err := probe.Execute(&sql, nil); err != nil {
		t.Fatal(err)
	}
	kinds := []string{"c", "e", "s", "a", "g", "d", "c", "e"}
	jobs := []string{"job-1", `quote " and \ backslash`, "tab\tnewline\nbell\x07", "café ☃ 𝄞", "\u2028\u2029", strings.Repeat("é", 100), "", "</script>"}
	slots := []time.Time{
		time.Date(2026, 12, 7, 2, 30, 0, 0, time.UTC), time.Date(2026, 12, 7, 2, 30, 0, 123456000, time.UTC),
		time.Unix(0, 0).UTC(), time.Date(1969, 12, 31, 23, 59, 59, 999999000, time.UTC),
		time.Date(2026, 3, 29, 1, 0, 0, 1000, time.UTC), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2000, 2, 29, 12, 0, 0, 999000, time.UTC),
	}
	owners := []string{"host:1:ab", `o"w\ner`, "", "replica-0", "ünï", "x", "a b", "\x01"}
	rows, err := pool.Query(context.Background(), sql.String(), kinds, jobs, slots, owners)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var job, built, want string
		if err := rows.Scan(&job, &built, &want); err != nil {
			t.Fatal(err)
		}
		if built != want {
			t.Errorf("job %q: built %q, json_build_array wrote %q", job, built, want)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(jobs) {
		t.Fatalf("%d lines compared, want %d", n, len(jobs))
	}
}
