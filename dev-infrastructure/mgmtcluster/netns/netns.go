// Package netns holds a private Linux network namespace owned by the calling process: a server
// started in it can listen only on its own loopback, which no other process of the host can
// reach, and the owner reaches it by dialling from inside the namespace.
//
// It exists for servers we cannot change that have a listener nobody else may use (the pinned
// Maestro's REST API, which has no client authentication; docs/security.md).
package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// NS is a new network namespace with only a loopback interface, up. One OS thread of the
// process stays in it for the namespace's lifetime; everything that must happen inside it
// (creating a socket, starting a child) runs on that thread. Sockets keep the namespace they were
// made in, so a connection dialled here may be read and written from any goroutine. That thread
// may be the process's main thread, and /proc/self/net (so /proc/net) shows the main thread's
// namespace: read a process's sockets from /proc/<pid>/task/<tid>/net of a thread outside, or
// from its children's /proc/<pid>/net.
type NS struct {
	work      chan func()
	quit      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// New makes the namespace. It needs CAP_SYS_ADMIN (the launcher runs as root); without it the
// error says so, and nothing falls back to a shared loopback.
func New() (*NS, error) {
	n := &NS{work: make(chan func()), quit: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan error, 1)
	go func() {
		// Never unlocked: when this goroutine returns, the runtime ends the thread with it
		// instead of handing a thread in another namespace to other goroutines.
		runtime.LockOSThread()
		defer close(n.done)
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			ready <- fmt.Errorf("create a network namespace (needs CAP_SYS_ADMIN: run as root): %w", err)
			return
		}
		if err := loopbackUp(); err != nil {
			ready <- err
			return
		}
		ready <- nil
		for {
			select {
			case f := <-n.work:
				f()
			case <-n.quit:
				return
			}
		}
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	return n, nil
}

// loopbackUp sets the new namespace's lo interface up (a new namespace starts with it down).
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bring up loopback in the network namespace: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("bring up loopback in the network namespace: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("read loopback flags in the network namespace: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring up loopback in the network namespace: %w", err)
	}
	return nil
}

// ErrClosed is returned by calls on a closed namespace.
var ErrClosed = errors.New("network namespace closed")

// Do runs f on the namespace's thread and returns its error. f must not block for long: every
// other call waits for it.
func (n *NS) Do(f func() error) (err error) {
	finished := make(chan struct{})
	select {
	case n.work <- func() { defer close(finished); err = f() }:
	case <-n.done:
		return ErrClosed
	}
	<-finished
	return err
}

// Listen opens a TCP listener inside the namespace.
func (n *NS) Listen(addr string) (l net.Listener, err error) {
	err = n.Do(func() error {
		l, err = net.Listen("tcp", addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listen on %s in the network namespace: %w", addr, err)
	}
	return l, nil
}

// DialContext connects to addr inside the namespace. Only loopback addresses are reachable
// there, so the connect completes at once or fails at once.
func (n *NS) DialContext(ctx context.Context, network, addr string) (c net.Conn, err error) {
	err = n.Do(func() error {
		var d net.Dialer
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// Start starts cmd inside the namespace: the child inherits the namespace of the thread that
// forks it.
func (n *NS) Start(cmd *exec.Cmd) error {
	return n.Do(cmd.Start)
}

// Close ends the namespace's thread. The namespace itself goes when the last process and socket
// in it are gone.
func (n *NS) Close() {
	n.closeOnce.Do(func() { close(n.quit) })
	<-n.done
}

// Supported reports whether this process may create a network namespace, for tests that must
// skip rather than fail on a machine that forbids it.
func Supported() bool {
	if os.Geteuid() != 0 {
		return false
	}
	n, err := New()
	if err != nil {
		return false
	}
	n.Close()
	return true
}
