package netns

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// TestNamespaceIsPrivate: a port listening inside the namespace is reachable from inside and
// refused from the host's loopback, even at the same address.
func TestNamespaceIsPrivate(t *testing.T) {
	if !Supported() {
		t.Skip("this process may not create network namespaces (needs root)")
	}
	ns, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Close)
	l, err := ns.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("inside"))
			c.Close()
		}
	}()
	addr := l.Addr().String()

	t.Run("host_loopback_is_refused", func(t *testing.T) {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err == nil {
			b, _ := io.ReadAll(c)
			c.Close()
			t.Fatalf("dial %s from the host succeeded (read %q); want connection refused", addr, b)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial %s from the host: %v; want connection refused", addr, err)
		}
	})
	t.Run("inside_is_served", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := ns.DialContext(ctx, "tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		if string(b) != "inside" {
			t.Fatalf("read %q, want %q", b, "inside")
		}
	})
}
