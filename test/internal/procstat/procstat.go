// Package procstat reads a process's name, parent and CPU times from /proc/<pid>/stat, for the
// benchmarks that say where a region's CPU went (test/e2e, test/scale). Linux only.
package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// tick is USER_HZ, the unit of /proc/<pid>/stat's CPU times: 100 per second on every Linux
// this project runs on (getconf CLK_TCK).
const tick = 10 * time.Millisecond

// Stat is what Read takes from one /proc/<pid>/stat.
type Stat struct {
	// Comm is the command name the kernel keeps (at most 15 bytes; may contain spaces).
	Comm string
	// State is the process state letter (R, S, D, Z for a zombie, ...).
	State string
	PPID  int
	// Own is the process's user + system CPU time (utime + stime); Children is that of its
	// children it has reaped (cutime + cstime).
	Own, Children time.Duration
}

// Read reads pid's Stat. An error means the process is gone or the file is not as proc(5)
// describes it.
func Read(pid int) (Stat, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Stat{}, err
	}
	return Parse(string(raw))
}

// Parse parses the text of a /proc/<pid>/stat.
func Parse(s string) (Stat, error) {
	// The name in parentheses may hold spaces and parentheses; the fields after the last ')'
	// do not.
	open, closeAt := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closeAt < open {
		return Stat{}, fmt.Errorf("/proc stat: no command name in %q", s)
	}
	// After the name: state(3) ppid(4) … utime(14) stime(15) cutime(16) cstime(17).
	f := strings.Fields(s[closeAt+1:])
	if len(f) < 15 {
		return Stat{}, fmt.Errorf("/proc stat: %d fields after the name, want at least 15", len(f))
	}
	var bad error
	n := func(field int) int64 {
		v, err := strconv.ParseInt(f[field-3], 10, 64)
		if err != nil && bad == nil {
			bad = fmt.Errorf("/proc stat: field %d: %w", field, err)
		}
		return v
	}
	st := Stat{Comm: s[open+1 : closeAt], State: f[0], PPID: int(n(4)),
		Own: time.Duration(n(14)+n(15)) * tick, Children: time.Duration(n(16)+n(17)) * tick}
	return st, bad
}

// Proc is one process as List saw it.
type Proc struct {
	PID int
	Stat
	// Args is the command line; empty for a kernel thread or a zombie.
	Args []string
}

// List reads every process /proc shows. A process that exits while it is read is left out.
func List() ([]Proc, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var out []Proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := Read(pid)
		if err != nil {
			continue
		}
		p := Proc{PID: pid, Stat: st}
		if raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && len(raw) > 0 {
			p.Args = strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		}
		out = append(out, p)
	}
	return out, nil
}

// Alive says whether pid runs; one that has exited, reaped or not (a zombie), does not.
func Alive(pid int) bool {
	st, err := Read(pid)
	return err == nil && st.State != "Z"
}

// Descendants are the processes of procs below root (its children, theirs, ...), in breadth-first
// order from root, each before its own children.
func Descendants(procs []Proc, root int) []Proc {
	children := map[int][]Proc{}
	for _, p := range procs {
		children[p.PPID] = append(children[p.PPID], p)
	}
	var out []Proc
	queue := children[root]
	for len(queue) > 0 {
		p := queue[0]
		queue = append(queue[1:], children[p.PID]...)
		out = append(out, p)
	}
	return out
}

// Mentions says whether any of p's arguments contains s.
func (p Proc) Mentions(s string) bool {
	for _, a := range p.Args {
		if strings.Contains(a, s) {
			return true
		}
	}
	return false
}

// Sched is what the scheduler kept of a process's threads (proc(5), /proc/<pid>/task/<tid>/schedstat):
// how long they ran on a CPU, and how long they were runnable but waited on a run queue for one.
// Threads that have exited are not counted.
type Sched struct {
	Ran, Waited time.Duration
}

// Add is s and o together.
func (s Sched) Add(o Sched) Sched { return Sched{Ran: s.Ran + o.Ran, Waited: s.Waited + o.Waited} }

// Sub is what s gained since o.
func (s Sched) Sub(o Sched) Sched { return Sched{Ran: s.Ran - o.Ran, Waited: s.Waited - o.Waited} }

// ReadSched sums the Sched of every live thread of pid.
func ReadSched(pid int) (Sched, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return Sched{}, fmt.Errorf("threads of %d: %w", pid, err)
	}
	var sum Sched
	for _, t := range tasks {
		raw, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread exited
		}
		s, err := ParseSchedstat(string(raw))
		if err != nil {
			return Sched{}, fmt.Errorf("thread %s of %d: %w", t.Name(), pid, err)
		}
		sum = sum.Add(s)
	}
	return sum, nil
}

// ParseSchedstat parses a schedstat line: nanoseconds on a CPU, nanoseconds waiting on a run
// queue, and the number of time slices.
func ParseSchedstat(s string) (Sched, error) {
	f := strings.Fields(s)
	if len(f) < 2 {
		return Sched{}, fmt.Errorf("schedstat %q: want at least 2 fields", s)
	}
	ran, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return Sched{}, fmt.Errorf("schedstat %q: time on a CPU: %w", s, err)
	}
	waited, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return Sched{}, fmt.Errorf("schedstat %q: time waiting: %w", s, err)
	}
	return Sched{Ran: time.Duration(ran), Waited: time.Duration(waited)}, nil
}
