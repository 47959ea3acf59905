package schedule

import (
	"archive/zip"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// zoneDB is a source of time zones for the DST tests.
type zoneDB struct {
	name string
	load func(t testing.TB, zone string) *time.Location
}

// zoneDatabases returns the databases the DST tests run against: the one
// time.LoadLocation finds here (usually the system's "fat" files, which
// list transitions up to 2037) and Go's own zoneinfo.zip, the data that
// time/tzdata embeds and that minimal containers end up with. Its "slim"
// files list few transitions and leave the rest to each zone's rule, which
// is where Go's ZoneBounds goes wrong (golang/go#81583), so both matter.
func zoneDatabases(t testing.TB) []zoneDB {
	dbs := []zoneDB{{name: "default", load: mustLoc}}
	if goZoneinfo(t) != nil {
		dbs = append(dbs, zoneDB{name: "zoneinfo.zip", load: mustLocFromZip})
	}
	return dbs
}

var zoneinfoZip struct {
	once  sync.Once
	files map[string]*zip.File
	mu    sync.Mutex
	locs  map[string]*time.Location
}

// goZoneinfo opens $GOROOT/lib/time/zoneinfo.zip, or returns nil (and the
// tests that need it only use the default database) if there is none.
func goZoneinfo(t testing.TB) map[string]*zip.File {
	zoneinfoZip.once.Do(func() {
		out, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			t.Logf("no go command to find GOROOT (%v): testing with the default zone database only", err)
			return
		}
		r, err := zip.OpenReader(filepath.Join(strings.TrimSpace(string(out)), "lib", "time", "zoneinfo.zip"))
		if err != nil {
			t.Logf("no zoneinfo.zip (%v): testing with the default zone database only", err)
			return
		}
		zoneinfoZip.files = map[string]*zip.File{}
		for _, f := range r.File {
			zoneinfoZip.files[f.Name] = f
		}
		zoneinfoZip.locs = map[string]*time.Location{}
	})
	return zoneinfoZip.files
}

func mustLocFromZip(t testing.TB, zone string) *time.Location {
	t.Helper()
	zoneinfoZip.mu.Lock()
	defer zoneinfoZip.mu.Unlock()
	if loc, ok := zoneinfoZip.locs[zone]; ok {
		return loc
	}
	f, ok := goZoneinfo(t)[zone]
	if !ok {
		t.Fatalf("zoneinfo.zip has no %s", zone)
	}
	rc, err := f.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	loc, err := time.LoadLocationFromTZData(zone, data)
	if err != nil {
		t.Fatalf("LoadLocationFromTZData(%s): %v", zone, err)
	}
	zoneinfoZip.locs[zone] = loc
	return loc
}
