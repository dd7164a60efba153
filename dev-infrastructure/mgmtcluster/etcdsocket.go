package mgmtcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Every etcd the region starts (a management cluster's, the Maestro authorizer's, each hosted
// cluster's) serves its clients and its peer on unix sockets, never on a TCP port: etcd 3.5
// keeps a connection that sends nothing for ever and has no connection cap, so any local user
// could fill its file limit with silent sockets on a TCP port and lock its own apiserver out (a
// hostile probe did). The sockets are in a directory of the etcd's own, mode 0700, which only
// the user running etcd and its kube-apiserver (a child of the same launcher) may enter.
//
// Where: a socket's path is limited to 108 bytes, and a path under a test's t.TempDir() or the
// sim's state directory can be longer, so the directory is a short one of its own,
// <parent>/etcd-<random>, with parent os.TempDir() (normally /tmp) unless the caller names
// another (the sim's pod, whose root filesystem is read-only, names one in its emptyDir). It is
// removed when the etcd is stopped for good.
const (
	// etcdClientSocket is the client socket's file name. etcd's Go client (the kube-apiserver's)
	// checks the server's certificate for the last path element of a unixs:// endpoint, and
	// etcd's serving certificate is issued for localhost (pki.Spec's default names).
	etcdClientSocket = "localhost"
	// etcdPeerSocket is the peer socket's name, relative to etcd's working directory (the socket
	// directory): etcd takes a unix peer URL's host as the path and allows no other, and wants
	// an advertised peer URL in host:port form. A one-member etcd dials no peer; etcd serves a
	// unix peer socket without TLS, which the directory's mode makes moot.
	etcdPeerSocket = "peer:0"
	// maxSocketPath is the longest path a unix socket may have (sun_path, 108 bytes, NUL
	// included).
	maxSocketPath = 107
	// etcdSocketRecord is the file, in an etcd's state directory, that names its socket
	// directory (etcdStart.Record).
	etcdSocketRecord = "etcd-socket-dir"
)

// etcdSockets is the directory of one etcd's sockets.
type etcdSockets struct{ dir string }

// newEtcdSockets makes a new socket directory, mode 0700, under parent (os.TempDir() when
// empty; made 0700 when missing).
func newEtcdSockets(parent string) (etcdSockets, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return etcdSockets{}, fmt.Errorf("etcd socket directory: %w", err)
	}
	if err := checkSocketParent(parent); err != nil {
		return etcdSockets{}, err
	}
	dir, err := os.MkdirTemp(parent, "etcd-") // mode 0700
	if err != nil {
		return etcdSockets{}, fmt.Errorf("etcd socket directory: %w", err)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return etcdSockets{}, fmt.Errorf("etcd socket directory: %w", err)
	}
	s := etcdSockets{dir: dir}
	if n := len(s.clientSocket()); n > maxSocketPath {
		s.remove()
		return etcdSockets{}, fmt.Errorf("etcd socket %s is %d bytes long, over the %d a unix socket may have: name a shorter parent directory", s.clientSocket(), n, maxSocketPath)
	}
	return s, nil
}

// checkSocketParent refuses a parent in which another user could rename a socket directory
// away and put one of their own in its place: one owned by a user other than this one or root,
// or that others may write to without the sticky bit (the system's /tmp has it).
func checkSocketParent(parent string) error {
	fi, err := os.Stat(parent)
	if err != nil {
		return fmt.Errorf("etcd socket directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok {
		return fmt.Errorf("etcd socket directory: %s is not a directory", parent)
	}
	if st.Uid != uint32(os.Geteuid()) && st.Uid != 0 {
		return fmt.Errorf("etcd socket directory: %s belongs to user %d, not this one (%d) or root: name a directory of this user's", parent, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&os.ModeSticky == 0 {
		return fmt.Errorf("etcd socket directory: others may write to %s (mode %o) and it has no sticky bit: name a directory only this user may write to", parent, fi.Mode().Perm())
	}
	return nil
}

// clientSocket is the path of the client socket.
func (s etcdSockets) clientSocket() string { return filepath.Join(s.dir, etcdClientSocket) }

// clientURL is etcd's --listen-client-urls and its apiserver's --etcd-servers: TLS over the
// unix socket (etcd's unixs scheme; the client certificate rule applies as on https).
func (s etcdSockets) clientURL() string { return "unixs://" + s.clientSocket() }

// remove deletes the directory and its sockets (after the etcd has stopped).
func (s etcdSockets) remove() {
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}

// EtcdHTTPClient is an HTTP client of the etcd serving at the unixs:// endpoint (a HostedEtcd's
// Endpoint, or a --listen-client-urls value), with tlsConfig (its CA and a client certificate):
// every request goes over the socket, whatever its URL's host, and the server's certificate is
// checked for localhost. Ask it for https://localhost/<path>.
func EtcdHTTPClient(endpoint string, tlsConfig *tls.Config) (*http.Client, error) {
	socket, err := EtcdSocketPath(endpoint)
	if err != nil {
		return nil, err
	}
	cfg := tlsConfig.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName = etcdClientSocket
	}
	var d net.Dialer
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: cfg,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", socket)
		},
	}}, nil
}

// RemoveEtcdSocketDir removes the socket directory of the etcd whose client URL
// (--listen-client-urls) was endpoint, once that etcd is gone: one a killed launcher left
// behind. Anything but a directory this package made (a unixs:// URL of a socket named
// localhost in an etcd-* directory) is left alone.
func RemoveEtcdSocketDir(endpoint string) {
	socket, err := EtcdSocketPath(endpoint)
	if err != nil || filepath.Base(socket) != etcdClientSocket {
		return
	}
	dir := filepath.Dir(socket)
	if strings.HasPrefix(filepath.Base(dir), "etcd-") {
		etcdSockets{dir: dir}.remove()
	}
}

// RemoveRecordedEtcdSocketDir removes the socket directory that the record in an etcd's
// state directory stateDir (a HostedEtcdOptions.Dir, a management cluster's Dir) names: one
// left by an etcd that is gone (its launcher was killed), whether or not another is started
// there again.
func RemoveRecordedEtcdSocketDir(stateDir string) {
	removeRecordedSocketDir(filepath.Join(stateDir, etcdSocketRecord))
}

// removeRecordedSocketDir removes the socket directory the record file names.
func removeRecordedSocketDir(record string) {
	if old, err := os.ReadFile(record); err == nil {
		RemoveEtcdSocketDir("unixs://" + filepath.Join(strings.TrimSpace(string(old)), etcdClientSocket))
	}
}

// EtcdSocketPath is the socket path of a unixs:// etcd endpoint.
func EtcdSocketPath(endpoint string) (string, error) {
	path, ok := strings.CutPrefix(endpoint, "unixs://")
	if !ok || !filepath.IsAbs(path) {
		return "", fmt.Errorf("etcd endpoint %q is not unixs:///<path>", endpoint)
	}
	return path, nil
}

// etcdStart is one etcd for startEtcd to run.
type etcdStart struct {
	// Name, Path, LogDir and LogMaxBytes are its ProcSpec's.
	Name, Path, LogDir string
	LogMaxBytes        int64
	// Member is its member name; DataDir its --data-dir (absolute).
	Member, DataDir string
	// SocketParent is where its socket directory is made (os.TempDir() when empty).
	SocketParent string
	// Record is a file in the etcd's state where the socket directory's path is kept: a start
	// removes the directory an earlier one recorded, left behind when its launcher was killed
	// (and its etcd with it) before it could remove it.
	Record       string
	ExtraArgs    []string
	ReadyTimeout time.Duration
}

// startEtcd runs a one-member etcd with PKI p on unix sockets in a new directory of its own,
// and waits for its /health. On error nothing it started or made is left.
func startEtcd(ctx context.Context, p *etcdPKI, o etcdStart) (*Process, etcdSockets, error) {
	removeRecordedSocketDir(o.Record)
	sockets, err := newEtcdSockets(o.SocketParent)
	if err != nil {
		return nil, etcdSockets{}, fmt.Errorf("%s: %w", o.Name, err)
	}
	if err := os.WriteFile(o.Record, []byte(sockets.dir+"\n"), 0o600); err != nil {
		sockets.remove()
		return nil, etcdSockets{}, fmt.Errorf("%s: record the socket directory: %w", o.Name, err)
	}
	client, err := p.httpClient(sockets.clientURL())
	if err != nil {
		sockets.remove()
		return nil, etcdSockets{}, fmt.Errorf("%s: %w", o.Name, err)
	}
	proc, err := StartProcess(ctx, ProcSpec{Name: o.Name, Path: o.Path, LogDir: o.LogDir, LogMaxBytes: o.LogMaxBytes, Dir: sockets.dir,
		Args: append(p.args(o.Member, o.DataDir, sockets), o.ExtraArgs...)})
	if err != nil {
		sockets.remove()
		return nil, etcdSockets{}, err
	}
	if err := proc.WaitFor(ctx, o.ReadyTimeout, "etcd /health", HTTPReady(client, "https://localhost/health")); err != nil {
		proc.Stop(10 * time.Second)
		sockets.remove()
		return nil, etcdSockets{}, err
	}
	return proc, sockets, nil
}
