//go:build unix

package clock

import (
	"time"

	"golang.org/x/sys/unix"
)

func sleepExactly(d time.Duration) {
	if d <= 0 {
		return
	}
	ts := unix.NsecToTimespec(int64(d))
	// Interrupted by a signal, it leaves the remainder in ts.
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
}
