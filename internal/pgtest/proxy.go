package pgtest

import (
	"net"
	"net/url"
	"sync"
	"testing"
)

// Proxy is a TCP proxy in front of the test database, for tests of what a
// process does when its connections break while the database lives on: a
// blip of the network between one replica and the database, or a pooler's
// restart. Cut resets every connection through it and refuses new ones until
// Restore. Hold keeps every connection open and passes no byte either way
// until Release, as a hung server, a lock or a half-open network look to a
// client: nothing is refused, nothing answers. Other connections to the
// database are not touched.
type Proxy struct {
	base   string // the URL proxied, whose host is target
	target string
	ln     net.Listener

	mu    sync.Mutex
	cut   bool
	held  chan struct{} // non-nil while held; closed by Release
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// NewProxy starts a proxy to the test database and returns it; URL is the
// database's URL through it. It stops at cleanup.
func NewProxy(t testing.TB) *Proxy {
	t.Helper()
	return newProxy(t, URL(t))
}

// NewProxyTo starts a proxy to the throwaway cluster c (or to a standby's
// primary: Addr is what a standby streams from). It stops at cleanup.
func NewProxyTo(t testing.TB, c *Cluster) *Proxy {
	t.Helper()
	return newProxy(t, c.URL())
}

func newProxy(t testing.TB, base string) *Proxy {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("pgtest: proxy: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pgtest: proxy: %v", err)
	}
	p := &Proxy{base: base, target: u.Host, ln: ln, conns: map[net.Conn]struct{}{}}
	go p.serve()
	t.Cleanup(p.close)
	return p
}

// URL is the database's URL through the proxy.
func (p *Proxy) URL(t testing.TB) string {
	t.Helper()
	u, err := url.Parse(p.base)
	if err != nil {
		t.Fatalf("pgtest: proxy: %v", err)
	}
	u.Host = p.ln.Addr().String()
	return u.String()
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut resets every connection through the proxy and refuses new ones (they
// are accepted and closed at once) until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		_ = c.Close()
	}
}

// Restore lets connections through again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

// Hold stops passing bytes, in both directions, on every connection through
// the proxy and every new one, until Release; the connections stay open.
func (p *Proxy) Hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == nil {
		p.held = make(chan struct{})
	}
}

// Release passes the bytes held, and every later one, again.
func (p *Proxy) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held != nil {
		close(p.held)
		p.held = nil
	}
}

// waitWhileHeld returns once the proxy is not held.
func (p *Proxy) waitWhileHeld() {
	p.mu.Lock()
	held := p.held
	p.mu.Unlock()
	if held != nil {
		<-held
	}
}

func (p *Proxy) serve() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			_ = client.Close()
			continue
		}
		p.mu.Unlock()
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.mu.Lock()
		if p.cut { // cut while dialling
			p.mu.Unlock()
			_ = client.Close()
			_ = server.Close()
			continue
		}
		p.conns[client], p.conns[server] = struct{}{}, struct{}{}
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pipe(client, server)
		go p.pipe(server, client)
	}
}

// pipe copies one direction, holding what it read while the proxy is held;
// the end of either side (a reset, a close) ends both.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.waitWhileHeld()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

func (p *Proxy) close() {
	_ = p.ln.Close()
	p.Cut()
	p.Release()
	p.wg.Wait()
}
