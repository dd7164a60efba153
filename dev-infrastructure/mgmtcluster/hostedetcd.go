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
}

// HostedEtcdDataDir is where StartHostedEtcd keeps the data of an etcd whose Dir is dir (its
// --data-dir, which also tells its process apart from any other).
func HostedEtcdDataDir(dir string) string { return filepath.Join(dir, "data") }

// HostedEtcd is the etcd of one hosted control plane: hypershift-sim starts one beside each
// hosted kube-apiserver it runs, as HyperShift runs an etcd per hosted cluster, so no cluster
// shares a store, a space quota or a client certificate with another. It is a separate process
// with its own CA, never the management cluster's etcd: no certificate it admits opens the
// management cluster's data, and the management apiserver's etcd certificate does not open it.
type HostedEtcd struct {
	// Endpoint is https://127.0.0.1:<port>.
	Endpoint string
	// CAFile verifies the server; CertFile/KeyFile are the client certificate its hosted
	// kube-apiserver presents.
	CAFile, CertFile, KeyFile string
	Proc                      *Process
}

// Stop ends the etcd.
func (e *HostedEtcd) Stop() {
	if e.Proc != nil {
		e.Proc.Stop(10 * time.Second)
	}
}

// StartHostedEtcd starts a TLS-only etcd on free loopback ports that admits only client
// certificates of its own CA (made in Dir/pki on first start, as for a management cluster's
// etcd), and waits for its /health.
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
	ports, err := FreePorts(2)
	if err != nil {
		return nil, err
	}
	clientURL := "https://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "https://127.0.0.1:" + strconv.Itoa(ports[1])
	args := p.args(o.Name, HostedEtcdDataDir(o.Dir), clientURL, peerURL)
	if o.QuotaBytes > 0 {
		args = append(args, "--quota-backend-bytes="+strconv.FormatInt(o.QuotaBytes, 10))
	}
	proc, err := StartProcess(ctx, ProcSpec{Name: o.Name, Path: o.EtcdPath, LogDir: o.LogDir, Args: args})
	if err != nil {
		return nil, err
	}
	e := &HostedEtcd{Endpoint: clientURL, CAFile: p.caCert, CertFile: p.clientCert, KeyFile: p.clientKey, Proc: proc}
	client, err := p.httpClient()
	if err != nil {
		e.Stop()
		return nil, fmt.Errorf("hosted etcd %s: %w", o.Name, err)
	}
	if err := proc.WaitFor(ctx, o.ReadyTimeout, "etcd /health", HTTPReady(client, clientURL+"/health")); err != nil {
		e.Stop()
		return nil, err
	}
	return e, nil
}
