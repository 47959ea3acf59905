package schedcache

import (
	"runtime"
	"testing"
	"time"
)

// The cache of parsed schedules holds them weakly: once no job uses one,
// it is collected and its entry removed.
func TestSharedSchedulesAreDroppedWithTheirJobs(t *testing.T) {
	key := scheduleKey{"17 4 * * 3", "Pacific/Chatham"}
	func() {
		loc, err := Location(key.zone)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Parse(key.spec, key.zone, loc)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := schedules.Load(key); !ok {
			t.Fatal("the parsed schedule is not cached")
		}
		runtime.KeepAlive(r)
	}()
	for range 500 {
		runtime.GC()
		if _, ok := schedules.Load(key); !ok {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the cache still holds a schedule no job uses")
}
