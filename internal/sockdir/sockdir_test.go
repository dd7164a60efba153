package sockdir

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/procstat"
)

// nobody is another user's ID in these tests (Debian's nobody).
const nobody = 65534

// parentKinds are the parents the tests make: a name, a mode, and whether another user
// (nobody) owns it.
var parentKinds = []struct {
	name   string
	mode   os.FileMode
	theirs bool
}{
	{"own", 0o700, false},
	{"own755", 0o755, false},
	{"group", 0o770, false},
	{"open", 0o777, false},
	{"sticky", 0o777 | os.ModeSticky, false},
	{"theirs", 0o755, true},
}

// parents makes one directory of each kind in a new temporary directory (another user's only
// under root, which may chown) and returns them by name, with "tmp" the system's temporary
// directory and "missing" one that does not exist yet.
func parents(t *testing.T) map[string]string {
	t.Helper()
	base := t.TempDir()
	m := map[string]string{"tmp": os.TempDir(), "missing": filepath.Join(base, "missing", "deeper")}
	for _, k := range parentKinds {
		if k.theirs && os.Geteuid() != 0 {
			continue
		}
		d := filepath.Join(base, k.name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, k.mode); err != nil {
			t.Fatal(err)
		}
		if k.theirs {
			if err := os.Chown(d, nobody, nobody); err != nil {
				t.Fatal(err)
			}
		}
		m[k.name] = d
	}
	return m
}

// parent is the parent named name in ps; the test is skipped when it could not be made (another
// user's, without root).
func parent(t *testing.T, ps map[string]string, name string) string {
	t.Helper()
	p, ok := ps[name]
	if !ok {
		t.Skipf("the parent %q needs root", name)
	}
	return p
}

// TestCheckParent: a socket directory's parent must be one nobody else may rename it away in:
// this user's or root's, and not writable by others unless it has the sticky bit (/tmp has).
func TestCheckParent(t *testing.T) {
	ps := parents(t)
	cases := []struct {
		parent string
		ok     bool
	}{
		{"tmp", true},
		{"own", true},
		{"own755", true},
		{"group", false},
		{"open", false},
		{"sticky", true},
		{"missing", false},
		{"theirs", false},
	}
	for _, tc := range cases {
		t.Run(tc.parent, func(t *testing.T) {
			p := parent(t, ps, tc.parent)
			if err := CheckParent(p); tc.ok != (err == nil) {
				t.Fatalf("CheckParent(%s) = %v, want accepted %v", p, err, tc.ok)
			}
		})
	}
}

// TestFits: a socket's path may have at most 107 bytes (108 with its NUL).
func TestFits(t *testing.T) {
	cases := []struct {
		name string
		dir  string
		ok   bool
	}{
		{"short", "/tmp/etcd-1", true},
		{"exactly_107", "/" + strings.Repeat("d", 101), true}, // "/ddd…/sock": 1+101+5 bytes
		{"108", "/" + strings.Repeat("d", 102), false},
		{"long", "/" + strings.Repeat("d", 200), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := Fits(tc.dir, "sock"); tc.ok != (err == nil) {
				t.Fatalf("Fits(%s, sock) = %v (path %d bytes), want accepted %v", tc.dir, err, len(tc.dir)+5, tc.ok)
			}
		})
	}
}

// TestNew: a new directory is 0700 under its parent (made when missing), records this process
// as its owner, and is refused, leaving nothing, under a parent another user may tamper with or
// where its longest socket would not fit.
func TestNew(t *testing.T) {
	ps := parents(t)
	cases := []struct {
		name    string
		parent  string
		longest string
		ok      bool
	}{
		{"the_temporary_directory", "tmp", "localhost", true},
		{"own", "own755", "localhost", true},
		{"missing_is_made", "missing", "mqtt.sock", true},
		{"world_writable", "open", "localhost", false},
		{"world_writable_sticky", "sticky", "localhost", true},
		{"too_long", "own", strings.Repeat("s", MaxPath), false},
		{"another_users", "theirs", "localhost", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := parent(t, ps, tc.parent)
			dir, err := New(p, "test-", tc.longest)
			if tc.ok != (err == nil) {
				t.Fatalf("New(%q) = %q, %v; want accepted %v", p, dir, err, tc.ok)
			}
			if !tc.ok {
				if left, _ := filepath.Glob(filepath.Join(p, "test-*")); tc.parent != "tmp" && len(left) != 0 {
					t.Errorf("a refused New left %v", left)
				}
				return
			}
			defer Remove(dir)
			fi, err := os.Lstat(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !filepath.IsAbs(dir) || !strings.HasPrefix(filepath.Base(dir), "test-") || !ownDir(fi) || fi.Mode().Perm() != 0o700 {
				t.Errorf("New made %s, mode %v; want an absolute test-* directory of this user's, mode 0700", dir, fi.Mode())
			}
			o, ok := readOwner(dir)
			if !ok || o.pid != os.Getpid() || !o.alive() {
				t.Errorf("owner record of %s: %+v (read %v); want this process (%d), alive", dir, o, ok, os.Getpid())
			}
			Remove(dir)
			if _, err := os.Lstat(dir); !os.IsNotExist(err) {
				t.Errorf("Remove(%s) left it: %v", dir, err)
			}
		})
	}
}

// TestAt: a socket directory at a fixed place is made 0700 (an existing one of this user's is
// tightened), and a symbolic link, a file, or a path too long for its socket is refused.
func TestAt(t *testing.T) {
	ps := parents(t)
	base := t.TempDir()
	if err := os.Symlink(ps["own"], filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		dir  string
		ok   bool
	}{
		{"new", filepath.Join(base, "new"), true},
		{"new_with_parents", filepath.Join(base, "a", "b", "sock"), true},
		{"existing_0755_is_tightened", ps["own755"], true},
		{"symlink", filepath.Join(base, "link"), false},
		{"file", filepath.Join(base, "file"), false},
		{"in_a_world_writable_parent", filepath.Join(ps["open"], "sock"), false},
		{"too_long", filepath.Join(base, strings.Repeat("d", MaxPath)), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := At(tc.dir, ".s.PGSQL.65535")
			if tc.ok != (err == nil) {
				t.Fatalf("At(%s) = %v, want accepted %v", tc.dir, err, tc.ok)
			}
			if !tc.ok {
				return
			}
			fi, err := os.Lstat(tc.dir)
			if err != nil || !ownDir(fi) || fi.Mode().Perm() != 0o700 {
				t.Fatalf("At(%s) made %v (%v), want a directory of this user's, mode 0700", tc.dir, fi.Mode(), err)
			}
		})
	}
}

// sleeper is a child process, a directory's owner in TestSweep.
func sleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	c := exec.Command("sleep", "600")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Process.Kill()
		_ = c.Wait()
	})
	return c
}

// TestSweep: Sweep removes this user's directories of the prefix whose owner process is gone
// (killed and reaped, a zombie, or its PID now another process's), and leaves every other entry:
// a live owner's, one without an owner record, one of another prefix, another PID namespace's,
// a symbolic link or a file of the prefix, and (as root) another user's.
func TestSweep(t *testing.T) {
	parent := t.TempDir()
	outside := t.TempDir()

	// owned makes parent/name, 0700, owned by process pid (no record when pid is 0).
	owned := func(t *testing.T, dir string, pid int) string {
		t.Helper()
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "sock"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if pid != 0 {
			if err := writeOwner(dir, pid); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	rewrite := func(t *testing.T, dir string, edit func(o owner) string) {
		t.Helper()
		o, ok := readOwner(dir)
		if !ok {
			t.Fatalf("no owner record in %s", dir)
		}
		if err := os.WriteFile(filepath.Join(dir, OwnerFile), []byte(edit(o)), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	live := sleeper(t)
	dead := sleeper(t)
	zombie := sleeper(t)

	cases := []struct {
		name    string
		make    func(t *testing.T, path string)
		removed bool
	}{
		{"owner_killed", func(t *testing.T, p string) { owned(t, p, dead.Process.Pid) }, true},
		{"owner_a_zombie", func(t *testing.T, p string) { owned(t, p, zombie.Process.Pid) }, true},
		{"owner_pid_reused", func(t *testing.T, p string) {
			owned(t, p, live.Process.Pid)
			rewrite(t, p, func(o owner) string { return fmt.Sprintf("%d %d %s\n", o.pid, o.start+1, o.ns) })
		}, true},
		{"owner_alive", func(t *testing.T, p string) { owned(t, p, live.Process.Pid) }, false},
		{"owner_this_process", func(t *testing.T, p string) { owned(t, p, os.Getpid()) }, false},
		{"no_owner_record", func(t *testing.T, p string) { owned(t, p, 0) }, false},
		{"unreadable_owner_record", func(t *testing.T, p string) {
			owned(t, p, dead.Process.Pid)
			rewrite(t, p, func(owner) string { return "garbage" })
		}, false},
		{"another_pid_namespace", func(t *testing.T, p string) {
			owned(t, p, dead.Process.Pid)
			rewrite(t, p, func(o owner) string { return fmt.Sprintf("%d %d pid:[1]\n", o.pid, o.start) })
		}, false},
		{"symlink_to_a_dead_owners_directory", func(t *testing.T, p string) {
			target := owned(t, filepath.Join(outside, "target"), dead.Process.Pid)
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"file", func(t *testing.T, p string) {
			if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, false},
	}
	if os.Geteuid() == 0 {
		cases = append(cases, struct {
			name    string
			make    func(t *testing.T, path string)
			removed bool
		}{"another_users", func(t *testing.T, p string) {
			owned(t, p, dead.Process.Pid)
			if err := os.Chown(p, nobody, nobody); err != nil {
				t.Fatal(err)
			}
		}, false})
	} else {
		t.Log("not root: the case of another user's directory is skipped")
	}
	other := owned(t, filepath.Join(parent, "other-dead"), dead.Process.Pid)
	for _, tc := range cases {
		tc.make(t, filepath.Join(parent, "sw-"+tc.name))
	}

	// The dead owner is killed by its PID and reaped; the zombie is killed and not reaped yet.
	if err := syscall.Kill(dead.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = dead.Wait()
	if err := syscall.Kill(zombie.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitZombie(t, zombie.Process.Pid)

	removed, err := Sweep(parent, "sw-")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(parent, "sw-"+tc.name)
			_, err := os.Lstat(p)
			gone := os.IsNotExist(err)
			if gone != tc.removed || slices.Contains(removed, p) != tc.removed {
				t.Errorf("after Sweep %s exists %v (reported removed %v), want removed %v", p, !gone, slices.Contains(removed, p), tc.removed)
			}
		})
	}
	if _, err := os.Lstat(other); err != nil {
		t.Errorf("Sweep of sw- removed %s, of another prefix: %v", other, err)
	}
	if _, err := os.Lstat(filepath.Join(outside, "target")); err != nil {
		t.Errorf("Sweep removed a symbolic link's target: %v", err)
	}
}

// waitZombie waits until process pid is a zombie (killed, not reaped).
func waitZombie(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		if st, ok := procstat.Parse(b); ok && st.State == "Z" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d is no zombie 30 s after SIGKILL: %s", pid, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSweepRefusesAParentOthersMayWriteTo: a parent another user could have planted entries in
// is not swept at all.
func TestSweepRefusesAParentOthersMayWriteTo(t *testing.T) {
	if _, err := Sweep(parents(t)["open"], "sw-"); err == nil {
		t.Fatal("Sweep of a world-writable parent without the sticky bit succeeded")
	}
	if removed, err := Sweep(filepath.Join(t.TempDir(), "missing"), "sw-"); err != nil || len(removed) != 0 {
		t.Fatalf("Sweep of a missing parent = %v, %v; want nothing, no error", removed, err)
	}
}

// TestCheckParentRefusesAnotherUsersSymlink: a parent reached through a symbolic link another
// user owns is refused, even when the link's target is a safe directory (root's, 0755): that
// user may swap the link (their own entry, even in a sticky directory such as /tmp) for one to
// a directory of theirs, with a socket of their own where a client looks. A link of this user's
// (or root's) is followed as before.
func TestCheckParentRefusesAnotherUsersSymlink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("another user's symbolic link needs root (lchown)")
	}
	base := t.TempDir()
	sticky := filepath.Join(base, "sticky")
	safe := filepath.Join(base, "safe")
	for _, d := range []string{sticky, safe} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(safe, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(sticky, "theirs")
	own := filepath.Join(sticky, "own")
	for _, l := range []string{theirs, own} {
		if err := os.Symlink(safe, l); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Lchown(theirs, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		parent string
		ok     bool
	}{
		{theirs, false},
		{filepath.Join(theirs, "sub"), false},
		{own, true},
		{filepath.Join(own, "sub"), true},
	}
	for _, tc := range cases {
		if err := CheckParent(tc.parent); tc.ok != (err == nil) {
			t.Errorf("CheckParent(%s) = %v, want accepted %v", tc.parent, err, tc.ok)
		}
	}
	if dir, err := New(theirs, "test-", "localhost"); err == nil {
		Remove(dir)
		t.Errorf("New under another user's symbolic link made %s", dir)
	}
}
