// Package sockdir makes the private directories the region's unix sockets live in (etcd's,
// mosquitto's, the hosted kube-apiservers' egress proxy's, PostgreSQL's and PgBouncer's), and
// removes those a killed process left behind.
//
// A directory is mode 0700: only its user (and root) may enter it, so another local user cannot
// even connect to a socket in it, whatever the socket's own mode. Its parent must be one nobody
// else may rename it away in (CheckParent), or another user could put a directory of their own,
// with a socket of their own, where a client looks. A socket's path is at most MaxPath bytes
// (sun_path), checked before anything is made, where a server would fail in its log.
//
// A directory New makes records its owner, the process that made it (its PID, its start time
// and its PID namespace), in a file OwnerFile; Sweep removes this user's directories whose owner
// is gone: those a SIGKILLed launcher left in the temporary directory.
package sockdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/openhcp/openhcp/internal/procstat"
)

const (
	// MaxPath is the longest path a unix socket may have on Linux (sun_path holds 108 bytes,
	// the terminating NUL included).
	MaxPath = 107
	// OwnerFile is the file, in a directory New made, that names its owner process:
	// "<pid> <start time> <PID namespace>" (the start time in clock ticks after boot, field 22 of
	// /proc/<pid>/stat, so a PID used again by another process does not count as the owner).
	OwnerFile = ".owner"
)

// New makes a new directory <parent>/<prefix><random>, mode 0700, for sockets whose longest
// name is longest, and records this process as its owner. An empty parent is os.TempDir(); a
// missing one is made (0700). It refuses a parent CheckParent refuses, and a directory in which
// a socket named longest would be too long a path; then nothing is left. It returns the
// directory's absolute path.
func New(parent, prefix, longest string) (string, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	parent, err := filepath.Abs(parent)
	if err != nil {
		return "", fmt.Errorf("socket directory: %w", err)
	}
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", fmt.Errorf("socket directory: %w", err)
	}
	if err := CheckParent(parent); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(parent, prefix) // mode 0700
	if err != nil {
		return "", fmt.Errorf("socket directory: %w", err)
	}
	if err := Fits(dir, longest); err != nil {
		Remove(dir)
		return "", err
	}
	if err := writeOwner(dir, os.Getpid()); err != nil {
		Remove(dir)
		return "", err
	}
	return dir, nil
}

// At makes the directory dir itself, mode 0700, for sockets whose longest name is longest: for
// a socket directory at a fixed place in a state directory. Its parent is made when missing
// (0700) and must pass CheckParent; an existing dir must be a directory (not a symbolic link) of
// this user's, and is made 0700. A dir in which a socket named longest would be too long a
// path is refused before anything is made. At records no owner: Sweep never removes it.
func At(dir, longest string) error {
	if err := Fits(dir, longest); err != nil {
		return err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	if err := CheckParent(parent); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("socket directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	if !ownDir(fi) {
		return fmt.Errorf("socket directory: %s is not a directory of this user's (%d)", dir, os.Geteuid())
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	return nil
}

// CheckParent refuses a parent in which another user could rename a socket directory away and
// put one of their own in its place: one owned by a user other than this one or root, or that
// others may write to without the sticky bit (the system's /tmp, root's and 1777, has it). It
// also refuses a parent whose path goes through a symbolic link another user owns (its own
// name or an ancestor's): that user may replace the link, even in a sticky directory, by one to
// a directory of theirs. The ancestors' own modes are not judged (a pod's emptyDir root is
// root's and 0777, and the pod has one user).
func CheckParent(parent string) error {
	if err := checkLinks(parent); err != nil {
		return err
	}
	fi, err := os.Stat(parent)
	if err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok {
		return fmt.Errorf("socket directory: %s is not a directory", parent)
	}
	if st.Uid != uint32(os.Geteuid()) && st.Uid != 0 {
		return fmt.Errorf("socket directory: %s belongs to user %d, not this one (%d) or root: name a directory of this user's", parent, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&os.ModeSticky == 0 {
		return fmt.Errorf("socket directory: others may write to %s (mode %o) and it has no sticky bit: name a directory only this user may write to", parent, fi.Mode().Perm())
	}
	return nil
}

// checkLinks refuses a path one of whose components (itself included) is a symbolic link owned
// by a user other than this one or root. The components are those of the path as written;
// links within a link's target are not followed.
func checkLinks(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	for p := abs; ; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err != nil {
			return fmt.Errorf("socket directory: %w", err)
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && fi.Mode()&fs.ModeSymlink != 0 &&
			st.Uid != uint32(os.Geteuid()) && st.Uid != 0 {
			return fmt.Errorf("socket directory: %s is a symbolic link of user %d, not this one (%d) or root, who may point it elsewhere: name a directory of this user's", p, st.Uid, os.Geteuid())
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// Fits fails when a socket named name in dir would be too long a path for a unix socket.
func Fits(dir, name string) error {
	if p := filepath.Join(dir, name); len(p) > MaxPath {
		return fmt.Errorf("socket %s is %d bytes long, over the %d a unix socket may have: use a shorter directory", p, len(p), MaxPath)
	}
	return nil
}

// Remove deletes the directory and everything in it (its sockets, once their server is gone).
func Remove(dir string) {
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}

// Sweep removes, under parent (os.TempDir() when empty), the directories named prefix<...> that
// New made for this user and whose owner process is gone, and returns their paths. It leaves
// everything else: another user's directory, one whose owner runs (or cannot be told to be
// gone: a PID namespace other than this process's, an unreadable /proc entry), one without an
// owner record (made before the record existed, or being made right now), and anything that is
// not a directory (a symbolic link included). A parent CheckParent refuses is not swept.
func Sweep(parent, prefix string) ([]string, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	if prefix == "" {
		return nil, errors.New("sweep socket directories: an empty prefix")
	}
	if _, err := os.Stat(parent); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err := CheckParent(parent); err != nil {
		return nil, fmt.Errorf("sweep socket directories: %w", err)
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil, fmt.Errorf("sweep socket directories: %w", err)
	}
	ns := pidNamespace()
	var removed []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		fi, err := os.Lstat(dir)
		if err != nil || !ownDir(fi) {
			continue
		}
		o, ok := readOwner(dir)
		if !ok || o.ns != ns || ns == "" || o.alive() {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			return removed, fmt.Errorf("sweep socket directories: %w", err)
		}
		removed = append(removed, dir)
	}
	return removed, nil
}

// ownDir reports a directory (not a symbolic link to one) owned by this process's user.
func ownDir(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.Mode().IsDir() && st.Uid == uint32(os.Geteuid())
}

// owner is a directory's owner process.
type owner struct {
	pid   int
	start uint64
	ns    string
}

// writeOwner records process pid (this process, or one a test names) as dir's owner.
func writeOwner(dir string, pid int) error {
	st, err := procstat.Read(pid)
	if err != nil {
		return fmt.Errorf("socket directory: the start time of process %d: %w", pid, err)
	}
	rec := fmt.Sprintf("%d %d %s\n", pid, st.StartTicks, pidNamespace())
	if err := os.WriteFile(filepath.Join(dir, OwnerFile), []byte(rec), 0o600); err != nil {
		return fmt.Errorf("socket directory: record its owner: %w", err)
	}
	return nil
}

// readOwner reads dir's owner record; false when there is none or it cannot be read.
func readOwner(dir string) (owner, bool) {
	b, err := os.ReadFile(filepath.Join(dir, OwnerFile))
	if err != nil {
		return owner{}, false
	}
	f := strings.Fields(string(b))
	if len(f) != 3 {
		return owner{}, false
	}
	pid, err1 := strconv.Atoi(f[0])
	start, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return owner{}, false
	}
	return owner{pid: pid, start: start, ns: f[2]}, true
}

// alive reports whether the owner process still runs: its PID is in use by a process started
// at the recorded time that is not a zombie. What cannot be read counts as alive.
func (o owner) alive() bool {
	st, err := procstat.Read(o.pid)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return false
	}
	if err != nil {
		return true
	}
	return st.StartTicks == o.start && st.State != "Z" && st.State != "X"
}

// pidNamespace names this process's PID namespace ("pid:[<inode>]"), "" if unknown. A PID
// recorded in another namespace says nothing about this one's processes.
func pidNamespace() string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return ns
}
