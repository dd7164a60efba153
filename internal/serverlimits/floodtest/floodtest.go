// Package floodtest holds connections against a capped listener or forward as a process holding
// no credential would, for the tests that require a client with its certificate to get through
// such a flood.
package floodtest

import (
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"sync"
	"testing"
	"time"
)

// Kind is what one connection of a flood sends before it falls silent and stays open.
type Kind int

const (
	// Silent sends nothing.
	Silent Kind = iota
	// OneByte sends one byte, a TLS handshake record's type.
	OneByte
	// ClientHello sends a TLS client's first flight and nothing more.
	ClientHello
	// Handshake completes (or fails) a TLS handshake with the connection's config: without a
	// certificate, or with one of another CA.
	Handshake
)

// Conn is one connection of a flood: its Kind, and the TLS config of a Handshake.
type Conn struct {
	Kind Kind
	TLS  *tls.Config
}

// Flood is a set of connections held open until the test ends.
type Flood struct {
	mu   sync.Mutex
	held []net.Conn
	wg   sync.WaitGroup
}

// Start opens n connections to addr at once, the i-th as conn(i) says, each within 5 s (one
// that cannot connect is left out), and holds them open until the test ends. hello is what a
// ClientHello connection sends (CaptureClientHello).
func Start(ctx context.Context, t testing.TB, addr string, n int, hello []byte, conn func(i int) Conn) *Flood {
	t.Helper()
	f := &Flood{}
	t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, c := range f.held {
			_ = c.Close()
		}
	})
	for i := range n {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			var d net.Dialer
			c, err := d.DialContext(dctx, "tcp", addr)
			if err != nil {
				return
			}
			f.mu.Lock()
			f.held = append(f.held, c)
			f.mu.Unlock()
			switch k := conn(i); k.Kind {
			case OneByte:
				_, _ = c.Write([]byte{0x16})
			case ClientHello:
				_, _ = c.Write(hello)
			case Handshake:
				tc := tls.Client(c, k.TLS.Clone())
				_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
				_ = tc.Handshake()
				_ = tc.SetDeadline(time.Time{})
			}
		}()
	}
	return f
}

// Wait waits until every connection of the flood was opened and has sent what it sends.
func (f *Flood) Wait() { f.wg.Wait() }

// CaptureClientHello is the first flight of a TLS client with cfg: what a ClientHello
// connection sends.
func CaptureClientHello(t testing.TB, cfg *tls.Config) []byte {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	go func() {
		_ = tls.Client(b, cfg).Handshake()
		b.Close()
	}()
	buf := make([]byte, 4096)
	_ = a.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := a.Read(buf)
	if err != nil || n < 5 || buf[0] != 0x16 {
		t.Fatalf("capture a ClientHello: %d bytes, %v", n, err)
	}
	return bytes.Clone(buf[:n])
}
