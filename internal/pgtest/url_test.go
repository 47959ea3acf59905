package pgtest

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/cronfence/cronfence/internal/freeport"
)

// deadURL returns a URL on a port where nothing listens.
func deadURL(t *testing.T) string {
	t.Helper()
	port, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/test?sslmode=disable&connect_timeout=2", port)
}

func noBinaries() (string, error) { return "", errors.New("not here") }

func TestResolve(t *testing.T) {
	t.Parallel()
	live := URL(t)
	missingDB, err := url.Parse(live)
	if err != nil {
		t.Fatal(err)
	}
	missingDB.Path = "/cftest_no_such_database"

	tests := []struct {
		name     string
		env      resolveEnv
		wantURL  string
		wantSkip string // substring
		wantErr  []string
	}{
		{
			name:    "default answers",
			env:     resolveEnv{defaultURL: live, findBin: noBinaries},
			wantURL: live,
		},
		{
			name:    "explicit URL answers",
			env:     resolveEnv{envURL: live, defaultURL: deadURL(t), findBin: noBinaries},
			wantURL: live,
		},
		{
			name:    "explicit URL dead is never replaced",
			env:     resolveEnv{envURL: deadURL(t), defaultURL: live, mainCalled: true, findBin: findBinDir},
			wantErr: []string{"TEST_DATABASE_URL is set", "fix or unset it"},
		},
		{
			name:    "server answers but refuses",
			env:     resolveEnv{defaultURL: missingDB.String(), mainCalled: true, findBin: findBinDir},
			wantErr: []string{"answered but refused", "cftest_no_such_database", "createdb", "TEST_DATABASE_URL"},
		},
		{
			name:     "nothing answers under -short",
			env:      resolveEnv{defaultURL: deadURL(t), short: true, mainCalled: true, findBin: findBinDir},
			wantSkip: "-short",
		},
		{
			name:    "nothing answers and no binaries",
			env:     resolveEnv{defaultURL: deadURL(t), mainCalled: true, findBin: noBinaries},
			wantErr: []string{"nothing answers", "apt-get install postgresql", "TEST_DATABASE_URL"},
		},
		{
			name:    "nothing answers and no Main to clean up",
			env:     resolveEnv{defaultURL: deadURL(t), findBin: findBinDir},
			wantErr: []string{"pgtest.Main(m)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, c := resolve(tt.env)
			if c != nil {
				t.Cleanup(func() { _ = c.destroy() })
				t.Fatalf("resolve started a cluster at %s", c.URL())
			}
			if res.url != tt.wantURL {
				t.Errorf("url = %q, want %q", res.url, tt.wantURL)
			}
			if !strings.Contains(res.skip, tt.wantSkip) || (tt.wantSkip == "") != (res.skip == "") {
				t.Errorf("skip = %q, want it to contain %q", res.skip, tt.wantSkip)
			}
			if (res.err != nil) != (tt.wantErr != nil) {
				t.Fatalf("err = %v, want one containing %q", res.err, tt.wantErr)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(res.err.Error(), want) {
					t.Errorf("err = %v\nwant it to contain %q", res.err, want)
				}
			}
		})
	}
}

// TestResolveStartsThrowawayCluster walks the path a machine without a
// running server takes: nothing answers, binaries exist, a cluster starts.
func TestResolveStartsThrowawayCluster(t *testing.T) {
	t.Parallel()
	res, c := resolve(resolveEnv{defaultURL: deadURL(t), mainCalled: true, findBin: findBinDir})
	if res.err != nil {
		t.Fatal(res.err)
	}
	if c == nil {
		t.Fatalf("no cluster started; resolution %+v", res)
	}
	dir := c.dir
	defer func() {
		if err := c.destroy(); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cluster directory %s still there after destroy: %v", dir, err)
		}
	}()
	if res.url != c.URL() {
		t.Errorf("url = %q, want the cluster's %q", res.url, c.URL())
	}
	if err := probe(res.url); err != nil {
		t.Errorf("throwaway cluster does not answer: %v", err)
	}
}
