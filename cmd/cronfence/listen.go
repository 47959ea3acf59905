package main

import (
	"fmt"
	"net"
	"strings"

	"github.com/cronfence/cronfence/cmd/cronfence/internal/config"
)

// MinNetworkTokenLength is the shortest token serve --listen accepts on
// an address other hosts can reach: a secret an attacker could guess, or
// one written by hand as "admin", guards nothing there.
const MinNetworkTokenLength = 16

// placeholderTokens are the tokens examples/cronfence.yaml falls back on
// when its variables are unset: fine on this machine, never on a network.
var placeholderTokens = []string{"change-me-admin", "change-me-read"}

// loopbackOnly reports whether addr (host:port, as --listen takes it) is
// reachable from this machine only: a loopback IP or "localhost". An
// empty host, 0.0.0.0, :: and any other name listen on the network.
func loopbackOnly(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkListenTokens refuses, for a --listen address other hosts can reach,
// tokens shorter than MinNetworkTokenLength and the example file's
// placeholders, naming each by its name and line (never its secret).
func checkListenTokens(listen, path string, tokens []config.Token) error {
	if loopbackOnly(listen) {
		return nil
	}
	var problems []string
	for _, t := range tokens {
		switch {
		case containsFold(placeholderTokens, t.Token):
			problems = append(problems, fmt.Sprintf("%s:%d: token %q is the example file's placeholder", path, t.Line, t.Name))
		case len(t.Token) < MinNetworkTokenLength:
			problems = append(problems, fmt.Sprintf("%s:%d: token %q is %d characters, fewer than %d", path, t.Line, t.Name, len(t.Token), MinNetworkTokenLength))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("--listen %s is reachable from other hosts, and %s; set secrets of %d or more random characters "+
		"(openssl rand -hex 32), or listen on 127.0.0.1", listen, strings.Join(problems, "; "), MinNetworkTokenLength)
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
