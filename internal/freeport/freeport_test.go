package freeport

import (
	"net"
	"strconv"
	"testing"
)

// Ports come from below the ephemeral range, once each, and nothing
// listens on them.
func TestPortsAreFreeDistinctAndBelowTheEphemeralRange(t *testing.T) {
	seen := map[int]bool{}
	for range 50 {
		p, err := Port()
		if err != nil {
			t.Fatal(err)
		}
		if p < lowest || p > highest {
			t.Fatalf("port %d is outside %d-%d", p, lowest, highest)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d was handed out, but cannot be listened on: %v", p, err)
		}
		_ = l.Close()
	}
}

// A port something listens on is skipped.
func TestAPortInUseIsSkipped(t *testing.T) {
	mu.Lock()
	busy := next
	mu.Unlock()
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(busy)))
	if err != nil {
		t.Skipf("port %d is taken by something else already: %v", busy, err)
	}
	defer l.Close()
	p, err := Port()
	if err != nil {
		t.Fatal(err)
	}
	if p == busy {
		t.Fatalf("Port handed out %d, which is listened on", p)
	}
}
