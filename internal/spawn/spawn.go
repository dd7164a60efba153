// Package spawn starts child processes that must die with the process that started them.
//
// Linux's parent-death signal (SysProcAttr.Pdeathsig) is sent when the *thread* that forked the
// child ends, not the process. Go runs goroutines on a pool of threads and ends a thread when a
// goroutine that locked it (runtime.LockOSThread, as a network namespace's worker does) returns
// without unlocking. A child forked from whatever thread the caller happened to run on is
// therefore SIGKILLed at a random later moment, when that thread is reused by such a goroutine
// and ends: a launcher's Cluster Service or PostgreSQL would "crash" for no reason of its own.
// Start forks every child from one locked thread that lives as long as the process, so the
// signal comes only when the process itself ends.
//
// A child started some other way on purpose (mgmtcluster's ProcSpec.Start, which forks inside a
// network namespace on that namespace's own locked thread) dies when that thread ends: its owner
// must stop the child first (the isolated Maestro server is stopped before its namespace closes).
package spawn

import (
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
)

// thread is the one forking thread of the process. It is process-wide on purpose: the
// parent-death signal is about the process's threads, and any second forking thread could end.
var thread struct {
	once sync.Once
	work chan func()
	tid  atomic.Int64 // the forking thread's ID, once it runs
}

// Start starts cmd (cmd.Start) on the process's forking thread and returns its error.
func Start(cmd *exec.Cmd) error {
	return Do(cmd.Start)
}

// Do runs start (which forks a child, e.g. a prepared command's Start) on the process's forking
// thread and returns its error. start must not block beyond the fork: every fork of the process
// waits for it. A start that itself calls Do runs the inner call in place (it is already on the
// forking thread) rather than waiting for itself.
func Do(start func() error) error {
	thread.once.Do(func() {
		thread.work = make(chan func())
		go func() {
			// Never unlocked and never returns: the thread lives as long as the process.
			runtime.LockOSThread()
			thread.tid.Store(int64(syscall.Gettid()))
			for f := range thread.work {
				f()
			}
		}()
	})
	if int64(syscall.Gettid()) == thread.tid.Load() {
		// Only the forking goroutine runs on that locked thread: this is a nested call.
		return start()
	}
	errc := make(chan error, 1)
	thread.work <- func() { errc <- start() }
	return <-errc
}
