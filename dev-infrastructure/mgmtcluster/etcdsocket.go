package mgmtcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/openhcp/openhcp/internal/sockdir"
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
// removed when the etcd is stopped for good; when its launcher was killed first, by the next
// start on the same state directory (etcdStart.Record) or by SweepSocketDirs at the next
// launcher's or sim's start (the directory records the process that made it: internal/sockdir).
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
	// etcdSocketDirPrefix begins the name of every etcd's socket directory.
	etcdSocketDirPrefix = "etcd-"
	// etcdSocketRecord is the file, in an etcd's state directory, that names its socket
	// directory (etcdStart.Record).
	etcdSocketRecord = "etcd-socket-dir"
)

// etcdSockets is the directory of one etcd's sockets.
type etcdSockets struct{ dir string }

// newEtcdSockets makes a new socket directory, <parent>/etcd-<random>, mode 0700, under parent
// (os.TempDir() when empty; made 0700 when missing), refusing a parent another user could
// tamper with and a client socket path too long for a unix socket (internal/sockdir).
func newEtcdSockets(parent string) (etcdSockets, error) {
	dir, err := sockdir.New(parent, etcdSocketDirPrefix, etcdClientSocket)
	if err != nil {
		return etcdSockets{}, fmt.Errorf("etcd: %w", err)
	}
	return etcdSockets{dir: dir}, nil
}

// clientSocket is the path of the client socket.
func (s etcdSockets) clientSocket() string { return filepath.Join(s.dir, etcdClientSocket) }

// clientURL is etcd's --listen-client-urls and its apiserver's --etcd-servers: TLS over the
// unix socket (etcd's unixs scheme; the client certificate rule applies as on https).
func (s etcdSockets) clientURL() string { return "unixs://" + s.clientSocket() }

// remove deletes the directory and its sockets (after the etcd has stopped).
func (s etcdSockets) remove() { sockdir.Remove(s.dir) }

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

// SweepSocketDirs removes the etcd and mosquitto socket directories under parent
// (os.TempDir() when empty) of this user's whose owner process, the launcher or sim that made
// them, is gone: those a SIGKILLed one left behind (internal/sockdir's Sweep). It returns the
// directories it removed; a live process's directories, another user's and anything else stay.
func SweepSocketDirs(parent string) ([]string, error) {
	var removed []string
	var errs []error
	for _, prefix := range []string{etcdSocketDirPrefix, mosquittoSocketDirPrefix} {
		r, err := sockdir.Sweep(parent, prefix)
		removed = append(removed, r...)
		errs = append(errs, err)
	}
	return removed, errors.Join(errs...)
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
	if strings.HasPrefix(filepath.Base(dir), etcdSocketDirPrefix) {
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
	Record    string
	ExtraArgs []string
	// Env is added to its environment (ProcSpec.Env).
	Env          []string
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
		Args: append(p.args(o.Member, o.DataDir, sockets), o.ExtraArgs...), Env: o.Env})
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
