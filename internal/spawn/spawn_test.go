package spawn

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

var errMainThread = errors.New("on the main thread")

// TestChildOutlivesTheThreadThatAskedForIt starts a child with a parent-death signal from a
// goroutine locked to its thread, then lets that goroutine return locked, so Go ends the thread,
// as a network namespace's worker does. Forked on that thread, the child is killed; forked on
// the forking thread, it runs on.
func TestChildOutlivesTheThreadThatAskedForIt(t *testing.T) {
	for _, tc := range []struct {
		name     string
		start    func(*exec.Cmd) error
		survives bool
	}{
		{name: "forked_on_the_callers_thread_dies_with_it", start: func(c *exec.Cmd) error { return c.Start() }},
		{name: "forked_on_the_spawn_thread_survives", start: Start, survives: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("sleep", "60")
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			// The asking goroutine must not be on the main thread, which Go never ends.
			started := make(chan error, 1)
			var tid int
			for asked := false; !asked; {
				go func() {
					runtime.LockOSThread() // never unlocked: the thread ends when this returns
					if syscall.Gettid() == os.Getpid() {
						runtime.UnlockOSThread()
						started <- errMainThread
						return
					}
					tid = syscall.Gettid()
					started <- tc.start(cmd)
				}()
				switch err := <-started; {
				case errors.Is(err, errMainThread):
				case err != nil:
					t.Fatal(err)
				default:
					asked = true
				}
			}
			exited := make(chan struct{}) // closed once the child is reaped; waitErr says how
			var waitErr error
			go func() { waitErr = cmd.Wait(); close(exited) }()
			t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
			if tc.survives {
				// Once the asking thread is gone, a child killed by its end has the signal
				// already; a second is ample for it to be reaped.
				for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
					if _, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", tid)); err != nil {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("the asking thread %d did not end", tid)
					}
				}
				select {
				case <-exited:
					t.Fatalf("the child exited (%v) when the thread that asked for it ended", waitErr)
				case <-time.After(time.Second):
				}
				return
			}
			select {
			case <-exited:
			case <-time.After(time.Minute):
				t.Fatal("the child forked on an ending thread was not killed: the premise of this package does not hold")
			}
		})
	}
}

// TestNestedDoRunsInPlace: a start that itself asks for the forking thread (it is on it) runs
// there at once instead of waiting for itself.
func TestNestedDoRunsInPlace(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		done <- Do(func() error {
			return Do(func() error { return nil })
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a nested Do waited for itself")
	}
}
