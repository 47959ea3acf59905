package cronfence

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"
	"sync"
)

// OwnerID returns this process's owner id for leases: host:pid:random. It is
// unique per process incarnation, never just the host name, so a restarted
// process (same host, maybe the same pid in a container) is a new owner and
// cannot renew or release what its previous incarnation held.
func OwnerID() string { return ownerID() }

var ownerID = sync.OnceValue(newOwnerID)

func newOwnerID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	if len(host) > 64 {
		host = host[:64]
	}
	return host + ":" + strconv.Itoa(os.Getpid()) + ":" + randomHex(6)
}

// randomHex is n random bytes in hex: a suffix that makes an id unique.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}
