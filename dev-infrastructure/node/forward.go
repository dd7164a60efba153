package node

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"syscall"
)

// setns(2) on linux/amd64 (the syscall package lacks the constant; the node is amd64 only, like its images).
const (
	sysSetns    = 308
	cloneNewNet = 0x40000000
)

// inNetns runs fn on an OS thread switched into the namespace; sockets fn creates stay in it.
func (n *Netns) inNetns(fn func() error) error {
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("opening the current network namespace: %w", err)
	}
	defer orig.Close()
	target, err := os.Open(n.Path())
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("opening network namespace %s: %w", n.Name, err)
	}
	defer target.Close()
	if _, _, e := syscall.RawSyscall(sysSetns, target.Fd(), cloneNewNet, 0); e != 0 {
		runtime.UnlockOSThread()
		return fmt.Errorf("entering network namespace %s: %w", n.Name, e)
	}
	ferr := fn()
	if _, _, e := syscall.RawSyscall(sysSetns, orig.Fd(), cloneNewNet, 0); e != 0 {
		// The thread stays locked and dies with this goroutine rather than serve others in the wrong namespace.
		return fmt.Errorf("leaving network namespace %s: %w", n.Name, e)
	}
	runtime.UnlockOSThread()
	return ferr
}

// Forward listens on a free loopback port of the host and relays each connection to addr inside
// the namespace, so host processes (helm, tests) reach the node without any host interface or
// route. It returns the host address; the relay stops when ctx ends.
func (n *Netns) Forward(ctx context.Context, addr string) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("forward listener: %w", err)
	}
	serve(ctx, l, func(c net.Conn) { n.relay(ctx, c, addr) })
	return l.Addr().String(), nil
}

// serve hands each connection l accepts to handle on its own goroutine until ctx ends, then
// closes l.
func serve(ctx context.Context, l net.Listener, handle func(net.Conn)) {
	go func() { <-ctx.Done(); l.Close() }()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
}

func (n *Netns) relay(ctx context.Context, c net.Conn, addr string) {
	defer c.Close()
	up, err := n.DialContext(ctx, "tcp", addr)
	if err != nil {
		return
	}
	defer up.Close()
	pipe(c, up)
}

// DialContext dials addr from inside the namespace (an http.Transport or net.Resolver may use it).
func (n *Netns) DialContext(ctx context.Context, network, addr string) (c net.Conn, err error) {
	if e := n.inNetns(func() error {
		c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
		return nil
	}); e != nil {
		return nil, e
	}
	return c, err
}

// Expose is the reverse of Forward: it listens on addr inside the namespace (host:0 picks a free
// port) and relays each connection to hostAddr in the host's namespace, such as a loopback port
// of PostgreSQL. Only what is exposed this way is reachable from inside: the namespace has no
// route to the host. It returns the listener's address in the namespace; the relay stops when
// ctx ends.
func (n *Netns) Expose(ctx context.Context, addr, hostAddr string) (string, error) {
	var l net.Listener
	if err := n.inNetns(func() (err error) {
		l, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		return "", fmt.Errorf("expose %s in namespace %s: %w", hostAddr, n.Name, err)
	}
	serve(ctx, l, func(c net.Conn) {
		defer c.Close()
		up, err := (&net.Dialer{}).DialContext(ctx, "tcp", hostAddr)
		if err != nil {
			return
		}
		defer up.Close()
		pipe(c, up)
	})
	return l.Addr().String(), nil
}

// pipe copies both ways until each side has finished sending, half-closing as it goes.
func pipe(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _, _ = io.Copy(b, a); b.(*net.TCPConn).CloseWrite() }()
	go func() { defer wg.Done(); _, _ = io.Copy(a, b); a.(*net.TCPConn).CloseWrite() }()
	wg.Wait()
}
