package maestrogate

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// echoServer echoes each connection until EOF, then closes it, with a plain read/write loop
// (io.Copy between sockets would splice through pipes of the test process's own), and counts
// the connections it holds.
type echoServer struct {
	l              net.Listener
	open           atomic.Int64
	closedByClient atomic.Int64
}

func newEchoServer(t *testing.T) *echoServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &echoServer{l: l}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			e.open.Add(1)
			go func() {
				defer e.open.Add(-1)
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						if _, err := c.Write(buf[:n]); err != nil {
							return
						}
					}
					if errors.Is(err, io.EOF) {
						e.closedByClient.Add(1)
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return e
}

func startForwarder(t *testing.T, limits ForwardLimits, target string) (*Forwarder, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	f := NewForwarder(limits, func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", target)
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	go f.Serve(l)
	return f, l.Addr().String()
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// waitFor polls cond until it holds or the (generous) deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestForwarderCapsConnectionsAndClosesIdleOnes(t *testing.T) {
	const maxConns, callers = 4, 12
	echo := newEchoServer(t)
	fdsBefore := openFDs(t)
	f, addr := startForwarder(t, ForwardLimits{MaxConns: maxConns, IdleTimeout: time.Second}, echo.l.Addr().String())

	var maxActive atomic.Int64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if n := int64(f.Active()); n > maxActive.Load() {
				maxActive.Store(n)
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()

	// Idle callers, as the probe's: connect and send nothing. Those above the cap wait in the
	// kernel's accept queue; each is served, then closed when idle, in turn.
	results := make(chan error, callers)
	var conns []net.Conn
	for range callers {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial forwarder: %v", err)
		}
		conns = append(conns, c)
		go func() {
			_ = c.SetReadDeadline(time.Now().Add(90 * time.Second))
			_, err := c.Read(make([]byte, 1))
			results <- err
		}()
	}
	for range callers {
		if err := <-results; !errors.Is(err, io.EOF) {
			t.Errorf("an idle caller's read ended with %v, want EOF (closed by the forwarder's idle timeout)", err)
		}
	}
	close(stopSampling)
	<-sampled
	for _, c := range conns {
		_ = c.Close()
	}
	if m := maxActive.Load(); m > maxConns {
		t.Errorf("the forwarder held %d connections at once, cap %d", m, maxConns)
	}
	waitFor(t, "the forwarder to hold no connection", func() bool { return f.Active() == 0 })
	waitFor(t, "the target to hold no connection", func() bool { return echo.open.Load() == 0 })
	// Both sockets of every forwarded connection are closed, and nothing else (a splice pipe)
	// is left open waiting for a garbage collection: the listener is the one descriptor more.
	waitFor(t, "the descriptors to be released", func() bool { return openFDs(t) <= fdsBefore+1 })
}

func TestForwarderKeepsABusyConnectionAndHalfCloses(t *testing.T) {
	echo := newEchoServer(t)
	const idle = 500 * time.Millisecond
	f, addr := startForwarder(t, ForwardLimits{MaxConns: 2, IdleTimeout: idle}, echo.l.Addr().String())
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A byte every idle/5, for four idle timeouts: each crossing resets the timeout.
	buf := make([]byte, 1)
	for end := time.Now().Add(4 * idle); time.Now().Before(end); time.Sleep(idle / 5) {
		if _, err := c.Write([]byte("x")); err != nil {
			t.Fatalf("write on a busy connection: %v", err)
		}
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatalf("echo on a busy connection: %v", err)
		}
	}
	// Half-close: the caller is done sending, the answer still comes back, then EOF.
	if _, err := c.Write([]byte("bye")); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "bye" {
		t.Fatalf("after CloseWrite read %q, %v; want \"bye\" then EOF", got, err)
	}
	waitFor(t, "the target to see the caller's EOF", func() bool { return echo.closedByClient.Load() == 1 })
	waitFor(t, "the forwarder to hold no connection", func() bool { return f.Active() == 0 })
}

func TestForwarderServesAgainAfterAConnectionCloses(t *testing.T) {
	echo := newEchoServer(t)
	_, addr := startForwarder(t, ForwardLimits{MaxConns: 1}, echo.l.Addr().String())
	for i := range 3 {
		// One at a time through a cap of one: each must be served after the one before closes.
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte{byte('a' + i)})
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		b := make([]byte, 1)
		if _, err := io.ReadFull(c, b); err != nil || b[0] != byte('a'+i) {
			t.Fatalf("caller %d: read %q, %v", i, b, err)
		}
		_ = c.Close()
	}
}

// TestForwarderMakesRoomFromSilentCallers: at the cap, a caller who sends at once (every caller
// of the forwarded ports does) is served by closing the connection silent longest, not kept
// waiting until the silent ones idle out (a probe: 256 silent sockets kept Cluster Service from
// reconnecting to Maestro's gRPC for as long as they were held). A caller who has sent a byte is
// not closed for it.
func TestForwarderMakesRoomFromSilentCallers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sent   string
		served bool
	}{
		{"silent_callers_make_room", "", true},
		{"callers_that_sent_a_byte_stay", "x", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			echo := newEchoServer(t)
			_, addr := startForwarder(t, ForwardLimits{MaxConns: 2, IdleTimeout: 10 * time.Minute}, echo.l.Addr().String())
			for range 2 {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				if _, err := c.Write([]byte(tc.sent)); err != nil {
					t.Fatal(err)
				}
			}
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write([]byte("hi")); err != nil {
				t.Fatal(err)
			}
			wait := 30 * time.Second
			if !tc.served {
				wait = 3 * time.Second // three times UnfinishedGrace
			}
			_ = c.SetReadDeadline(time.Now().Add(wait))
			b := make([]byte, 2)
			_, err = io.ReadFull(c, b)
			switch {
			case tc.served && err != nil:
				t.Fatalf("a caller at a cap held by silent callers: %v", err)
			case !tc.served && err == nil:
				t.Fatal("a caller was served by closing a connection that had sent a byte")
			case !tc.served:
				if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
					t.Fatalf("the waiting caller: %v, want it still waiting (a timeout)", err)
				}
			}
		})
	}
}

// failingListener fails its first Accept calls as a process out of descriptors does.
type failingListener struct {
	net.Listener
	failures atomic.Int64
}

func (l *failingListener) Accept() (net.Conn, error) {
	if l.failures.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	return l.Listener.Accept()
}

// TestForwarderOutlivesAFailedAccept: a process that ran out of descriptors once does not lose
// its forward for good (the forwarder once returned on any Accept error).
func TestForwarderOutlivesAFailedAccept(t *testing.T) {
	echo := newEchoServer(t)
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &failingListener{Listener: inner}
	l.failures.Store(3)
	t.Cleanup(func() { _ = l.Close() })
	f := NewForwarder(ForwardLimits{MaxConns: 2}, func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", echo.l.Addr().String())
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	done := make(chan struct{})
	go func() { defer close(done); f.Serve(l) }()
	c, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = c.Write([]byte("x"))
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	b := make([]byte, 1)
	if _, err := io.ReadFull(c, b); err != nil || b[0] != 'x' {
		t.Fatalf("after failed accepts: read %q, %v", b, err)
	}
	_ = l.Close()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return after its listener closed")
	}
}
