//go:build !unix

package clock

import "time"

func sleepExactly(d time.Duration) { time.Sleep(d) }
