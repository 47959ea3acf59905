// Package freeport hands out TCP ports on 127.0.0.1 for test servers that
// are stopped and started again on the same port (a replica killed and
// restarted, a database restarted or failed over).
//
// A port from listening on 127.0.0.1:0 is one of the kernel's ephemeral
// ports (32768-60999 on Linux), the range every outgoing connection's
// local port also comes from: while its server was down, another
// connection or listener of the machine could take it, and the server
// failed to listen again ("address already in use"), seen with chaos runs
// side by side. The ports handed out here are below that range, where only
// an explicit bind takes a port; each is handed out once per process, from
// a random start so that two test processes seldom meet, and one found in
// use is skipped.
package freeport

import (
	"errors"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
)

// The range handed out: below Linux's default ephemeral range.
const (
	lowest  = 20000
	highest = 32767
)

var (
	mu   sync.Mutex
	next = lowest + rand.IntN(highest-lowest+1)
)

// Port returns a port on 127.0.0.1 that nothing listens on now, outside
// the ephemeral range.
func Port() (int, error) {
	mu.Lock()
	defer mu.Unlock()
	for range highest - lowest + 1 {
		p := next
		if next++; next > highest {
			next = lowest
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue // in use
		}
		_ = l.Close()
		return p, nil
	}
	return 0, errors.New("freeport: every port from 20000 to 32767 on 127.0.0.1 is in use")
}

// Addr is Port as a "127.0.0.1:port" address.
func Addr() (string, error) {
	p, err := Port()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), nil
}
