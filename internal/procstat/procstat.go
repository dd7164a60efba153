// Package procstat reads what Linux's /proc/<pid>/stat says of a process: its state, parent
// and start time. The region's process checks (a socket directory's owner, PostgreSQL's
// children, the sim's orphaned control planes) share this one reading of the line.
package procstat

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Stat is a process's line in /proc/<pid>/stat, the fields the region reads.
type Stat struct {
	// State is field 3 ("R", "S", "Z" for a zombie, "X" for dead, ...).
	State string
	// PPID is field 4, the parent's PID.
	PPID int
	// StartTicks is field 22, the start time in clock ticks after boot: with the PID it names
	// one process, since a PID is used again.
	StartTicks uint64
}

// Read reads pid's line. A process that is gone is an error wrapping fs.ErrNotExist (or ESRCH,
// when it went while being read).
func Read(pid int) (Stat, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return Stat{}, err
	}
	st, ok := Parse(b)
	if !ok {
		return Stat{}, fmt.Errorf("/proc/%d/stat: %w: %q", pid, errMalformed, b)
	}
	return st, nil
}

var errMalformed = errors.New("not a stat line")

// Parse reads a stat line. The command name (field 2) is in parentheses and may hold spaces
// and parentheses itself, so the fields after it are counted from its last ')'.
func Parse(b []byte) (Stat, bool) {
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return Stat{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return Stat{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return Stat{}, false
	}
	return Stat{State: f[0], PPID: ppid, StartTicks: start}, true
}
