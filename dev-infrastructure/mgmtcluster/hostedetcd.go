package mgmtcluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"
)

// HostedEtcdOptions configures StartHostedEtcd.
type HostedEtcdOptions struct {
	// Name identifies the etcd in logs (<LogDir>/<Name>.log).
	Name string
	// Dir holds its PKI (pki/) and data (data/); both are reused when present.
	Dir      string
	LogDir   string
	EtcdPath string
	// ReadyTimeout bounds the wait for /health; zero means 90s.
	ReadyTimeout time.Duration
	// QuotaBytes is etcd's space quota (--quota-backend-bytes); zero leaves etcd's default (2 GiB).
	QuotaBytes int64
	// SocketParent is where the etcd's socket directory is made (etcdsocket.go); empty means
	// os.TempDir().
	SocketParent string
	// LogMaxBytes bounds its process log (ProcSpec.LogMaxBytes); zero leaves it unbounded.
	LogMaxBytes int64
	// GoMemLimit, when not zero, is its Go runtime's soft memory limit (GOMEMLIMIT, bytes): the
	// collector works harder near it instead of letting garbage grow the heap.
	GoMemLimit int64
}

// HostedEtcdDataDir is where StartHostedEtcd keeps the data of an etcd whose Dir is dir (its
// --data-dir, which also tells its process apart from any other), as an absolute path: etcd
// runs in its socket directory.
func HostedEtcdDataDir(dir string) string {
	d := filepath.Join(dir, "data")
	if abs, err := filepath.Abs(d); err == nil {
		return abs
	}
	return d
}

// HostedEtcd is the etcd of one hosted control plane: hypershift-sim starts one beside each
// hosted kube-apiserver it runs, as HyperShift runs an etcd per hosted cluster, so no cluster
// shares a store, a space quota or a client certificate with another. It is a separate process
// with its own CA, never the management cluster's etcd: no certificate it admits opens the
// management cluster's data, and the management apiserver's etcd certificate does not open it.
type HostedEtcd struct {
	// Endpoint is unixs://<socket directory>/localhost: TLS over a unix socket in a directory
	// only this user may enter (etcdsocket.go); EtcdHTTPClient talks to it.
	Endpoint string
	// CAFile verifies the server; CertFile/KeyFile are the client certificate its hosted
	// kube-apiserver presents.
	CAFile, CertFile, KeyFile string
	Proc                      *Process
	sockets                   etcdSockets
}

// Stop ends the etcd (if it still runs) and removes its socket directory. Call it also for an
// etcd that exited by itself.
func (e *HostedEtcd) Stop() {
	if e.Proc != nil {
		e.Proc.Stop(10 * time.Second)
	}
	e.sockets.remove()
}

// A hosted etcd's WAL bound (StartHostedEtcd): a snapshot every so many entries, and so many
// 64 MB segments kept once a snapshot has released them.
const (
	hostedEtcdSnapshotCount = 100
	hostedEtcdMaxWALs       = 2
)

// StartHostedEtcd starts a TLS-only etcd on unix sockets of its own (no TCP port) that admits
// only client certificates of its own CA (made in Dir/pki on first start, as for a management
// cluster's etcd), and waits for its /health.
func StartHostedEtcd(ctx context.Context, o HostedEtcdOptions) (*HostedEtcd, error) {
	if o.Name == "" || o.Dir == "" || o.LogDir == "" || o.EtcdPath == "" {
		return nil, errors.New("hosted etcd: Name, Dir, LogDir and EtcdPath are required")
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 90 * time.Second
	}
	p, err := loadOrCreateEtcdPKI(filepath.Join(o.Dir, "pki"))
	if err != nil {
		return nil, fmt.Errorf("hosted etcd %s: %w", o.Name, err)
	}
	// The quota bounds the database, not the write-ahead log, whose segments etcd frees only
	// up to its last snapshot (every 100,000 entries by default): a customer writing big
	// objects that the apiserver's compaction frees again never meets the quota while the WAL
	// grows on the sim's disk (450 puts of 1 MiB left 556 MiB in a 64 MiB quota), and all of
	// it is replayed into memory at each start. A snapshot every hostedEtcdSnapshotCount
	// entries (at most about 150 MiB of the largest requests) lets etcd's purge, every 30 s,
	// keep hostedEtcdMaxWALs segments of 64 MB.
	extra := []string{"--snapshot-count=" + strconv.Itoa(hostedEtcdSnapshotCount), "--max-wals=" + strconv.Itoa(hostedEtcdMaxWALs)}
	if o.QuotaBytes > 0 {
		extra = append(extra, "--quota-backend-bytes="+strconv.FormatInt(o.QuotaBytes, 10))
	}
	var env []string
	if o.GoMemLimit > 0 {
		env = []string{"GOMEMLIMIT=" + strconv.FormatInt(o.GoMemLimit, 10)}
	}
	proc, sockets, err := startEtcd(ctx, p, etcdStart{Name: o.Name, Path: o.EtcdPath, LogDir: o.LogDir, Env: env,
		LogMaxBytes: o.LogMaxBytes, Member: o.Name, DataDir: HostedEtcdDataDir(o.Dir), SocketParent: o.SocketParent, Record: filepath.Join(o.Dir, etcdSocketRecord), ExtraArgs: extra, ReadyTimeout: o.ReadyTimeout})
	if err != nil {
		return nil, fmt.Errorf("hosted etcd: %w", err)
	}
	return &HostedEtcd{Endpoint: sockets.clientURL(), CAFile: p.caCert, CertFile: p.clientCert, KeyFile: p.clientKey, Proc: proc, sockets: sockets}, nil
}
