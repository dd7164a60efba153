package mgmtcluster

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// plaintextEtcdClient speaks plain HTTP over etcd's client socket (endpoint a unixs:// URL):
// what etcd must refuse. Ask it for http://localhost/<path>.
func plaintextEtcdClient(t *testing.T, endpoint string) *http.Client {
	t.Helper()
	socket, err := EtcdSocketPath(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}}
}

// nobody is the user a hostile local process runs as in these tests (Debian's nobody).
const nobody = 65534

// etcdClientAddr is the network and address etcd serves its clients on, from its command line
// (--listen-client-urls): a TCP host:port for an https URL, a path for a unixs one.
func etcdClientAddr(t *testing.T, args []string) (network, addr string) {
	t.Helper()
	for _, a := range args {
		v, ok := strings.CutPrefix(a, "--listen-client-urls=")
		if !ok {
			continue
		}
		u, err := url.Parse(v)
		if err != nil {
			t.Fatalf("--listen-client-urls=%s: %v", v, err)
		}
		switch u.Scheme {
		case "https", "http":
			return "tcp", u.Host
		case "unixs", "unix":
			return "unix", u.Host + u.Path
		}
		t.Fatalf("--listen-client-urls=%s: scheme %q", v, u.Scheme)
	}
	t.Fatalf("no --listen-client-urls in %v", args)
	return "", ""
}

// tcpListeners is every TCP port that process pid listens on: its sockets' inodes (from
// /proc/<pid>/fd) matched against the LISTEN rows of its network namespace's /proc/<pid>/net/tcp
// and tcp6.
func tcpListeners(t *testing.T, pid int) []int {
	t.Helper()
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	fds, err := os.ReadDir(filepath.Join(proc, "fd"))
	if err != nil {
		t.Fatalf("file descriptors of %d: %v", pid, err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(proc, "fd", fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var ports []int
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(filepath.Join(proc, "net", table))
		if err != nil {
			t.Fatalf("%s of %d: %v", table, pid, err)
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" || !inodes[fields[9]] { // 0A: LISTEN
				continue
			}
			_, portHex, _ := strings.Cut(fields[1], ":")
			b, err := hex.DecodeString(portHex)
			if err != nil || len(b) != 2 {
				t.Fatalf("%s of %d: local address %q", table, pid, fields[1])
			}
			ports = append(ports, int(b[0])<<8|int(b[1]))
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatalf("%s of %d: %v", table, pid, err)
		}
	}
	return ports
}

// checkEtcdHasNoTCPListener: etcd (its process p) listens on no TCP port, neither for its
// clients nor for its peer.
func checkEtcdHasNoTCPListener(t *testing.T, p *Process) {
	t.Helper()
	if ports := tcpListeners(t, p.PID()); len(ports) != 0 {
		t.Errorf("etcd (pid %d) listens on TCP ports %v, want none (its clients and its peer on unix sockets)", p.PID(), ports)
	}
}

// checkEtcdRefusesAnotherUser: a process of another local user (nobody, holding no
// credential) cannot even connect to etcd's client endpoint, let alone keep a silent
// connection there: the socket's directory is etcd's user's alone (0700). Run as root, the
// connect is made as nobody (root passes every file permission check); run as another user,
// only the directory's mode and owner are checked.
func checkEtcdRefusesAnotherUser(t *testing.T, p *Process) {
	t.Helper()
	network, addr := etcdClientAddr(t, p.Spec.Args)
	if os.Geteuid() == 0 {
		err := dialAsNobody(network, addr)
		if err == nil {
			t.Fatalf("user %d connected to etcd's client endpoint %s %s", nobody, network, addr)
		}
		if !errors.Is(err, syscall.EACCES) {
			t.Fatalf("user %d dialling etcd's client endpoint %s %s: %v, want permission denied", nobody, network, addr, err)
		}
	}
	if network != "unix" {
		t.Fatalf("etcd serves its clients on %s %s, want a unix socket", network, addr)
	}
	dir := filepath.Dir(addr)
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if owner := st.Sys().(*syscall.Stat_t).Uid; st.Mode().Perm() != 0o700 || owner != uint32(os.Geteuid()) {
		t.Errorf("etcd's socket directory %s: mode %o, owner %d; want 700 and %d (etcd's user)", dir, st.Mode().Perm(), owner, os.Geteuid())
	}
}

// dialAsNobody connects to network/addr from an OS thread whose user and groups are nobody's
// (this process must be root), and closes the connection again. Linux keeps credentials
// per thread, and the raw setresuid/setgroups below change only the calling one; the goroutine
// ends with its thread still locked, so the Go runtime ends that thread rather than reuse it,
// and it starts new threads from a template thread, never from a locked one.
func dialAsNobody(network, addr string) error {
	result := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread goes with the goroutine
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETGROUPS, 0, 0, 0); e != 0 {
			result <- fmt.Errorf("setgroups: %w", e)
			return
		}
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESGID, nobody, nobody, nobody); e != 0 {
			result <- fmt.Errorf("setresgid: %w", e)
			return
		}
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, nobody, nobody, nobody); e != 0 {
			result <- fmt.Errorf("setresuid: %w", e)
			return
		}
		if uid := syscall.Geteuid(); uid != nobody {
			result <- fmt.Errorf("the dialling thread runs as %d, not %d", uid, nobody)
			return
		}
		c, err := net.DialTimeout(network, addr, 10*time.Second)
		if err == nil {
			c.Close()
		}
		result <- err
	}()
	return <-result
}

// TestSupervisedEtcdComesBackOnItsSocket: the launcher supervises a management cluster's etcd
// and starts the same command line again after a crash (docs/local-region.md, chaos). The
// socket directory outlives the process, so the new etcd listens where the running apiserver
// looks, and the cluster answers again.
func TestSupervisedEtcdComesBackOnItsSocket(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real etcd and kube-apiserver")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	apiserver, etcd, err := KubeBinaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mc, err := StartManagementCluster(ctx, ManagementClusterOptions{Name: "crash", Dir: dir, LogDir: dir,
		APIServerPath: apiserver, EtcdPath: etcd, SkipCRDs: true, ReadyTimeout: 3 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Stop()
	mc.Etcd.Supervise(RestartPolicy{Backoff: 100 * time.Millisecond, MaxBackoff: time.Second, ResetAfter: time.Minute})
	before := mc.Etcd.PID()
	if err := syscall.Kill(before, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(mc.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "after-crash-"}}, metav1.CreateOptions{})
		if err == nil && mc.Etcd.PID() != before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write through the apiserver 2 min after its etcd was killed (restarts %d): %v\n%s", mc.Etcd.Restarts(), err, mc.Etcd.LogTail(2048))
		}
		time.Sleep(200 * time.Millisecond)
	}
	checkEtcdHasNoTCPListener(t, mc.Etcd)
}

// TestEtcdSocketParentMustBeTheUsersOwn: a socket directory is made 0700 under its parent,
// but whoever may write to the parent may rename it away and put a directory of their own,
// with a socket of their own, where etcd's apiserver looks (a named --hosted-socket-dir another
// user made first, say /tmp/hs). Such a parent is refused: one owned by another user, or that
// others may write to without the sticky bit (/tmp itself has it, and passes).
func TestEtcdSocketParentMustBeTheUsersOwn(t *testing.T) {
	base := t.TempDir()
	mk := func(name string, mode os.FileMode, uid int) string {
		d := filepath.Join(base, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
		if uid >= 0 {
			if err := os.Chown(d, uid, uid); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	cases := []struct {
		name   string
		parent string
		ok     bool
	}{
		{"the_temporary_directory", os.TempDir(), true},
		{"own_0700", mk("own", 0o700, -1), true},
		{"missing_is_made", filepath.Join(base, "new"), true},
		{"world_writable", mk("open", 0o777, -1), false},
		{"world_writable_sticky", mk("sticky", 0o777|os.ModeSticky, -1), true},
	}
	if os.Geteuid() == 0 {
		cases = append(cases, struct {
			name   string
			parent string
			ok     bool
		}{"another_users", mk("theirs", 0o755, nobody), false})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := newEtcdSockets(tc.parent)
			if err == nil {
				s.remove()
			}
			if tc.ok != (err == nil) {
				t.Fatalf("newEtcdSockets(%s) = %v, want accepted %v", tc.parent, err, tc.ok)
			}
		})
	}
}
