package mgmtcluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/openhcp/openhcp/internal/pki"
)

// etcdPKI is a management cluster's etcd CA, etcd's serving (and peer) certificate and the
// kube-apiserver's etcd client certificate, in the cluster's pki/ directory. The CA is its own,
// not the apiserver's: every certificate of the apiserver's CA (the admin's, the admin API's
// reader) would otherwise open etcd, and etcd cannot restrict what an admitted client does.
type etcdPKI struct {
	caCert, serverCert, serverKey, clientCert, clientKey string
}

// loadOrCreateEtcdPKI keeps the PKI in dir, and issues a new one (a new CA) when any of its
// files is missing or no longer valid.
func loadOrCreateEtcdPKI(dir string) (*etcdPKI, error) {
	// Absolute: etcd runs in its socket directory (args).
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("etcd PKI: %w", err)
	}
	p := &etcdPKI{
		caCert:     filepath.Join(dir, "etcd-ca.crt"),
		serverCert: filepath.Join(dir, "etcd-server.crt"),
		serverKey:  filepath.Join(dir, "etcd-server.key"),
		clientCert: filepath.Join(dir, "apiserver-etcd-client.crt"),
		clientKey:  filepath.Join(dir, "apiserver-etcd-client.key"),
	}
	if keptPKI(p.caCert, p.serverCert, p.serverKey, p.clientCert, p.clientKey) {
		return p, nil
	}
	ca, err := pki.NewAuthority("openhcp-dev-etcd-ca", devCertValidity)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{p.caCert: ca.PEM}
	leaf := func(certPath, keyPath string, s pki.Spec) error {
		s.Lifetime, s.NoOrganization = devCertValidity, true
		iss, err := ca.Issue(s)
		if err != nil {
			return err
		}
		files[certPath], files[keyPath] = iss.CertPEM, iss.KeyPEM
		return nil
	}
	// The serving certificate is also the peer certificate, presented as client and server, for
	// the loopback names (pki.Spec's default).
	serving := pki.Spec{CommonName: "etcd", Usage: pki.Server | pki.Client}
	if err := leaf(p.serverCert, p.serverKey, serving); err != nil {
		return nil, err
	}
	if err := leaf(p.clientCert, p.clientKey, pki.Spec{CommonName: "kube-apiserver-etcd-client", Usage: pki.Client}); err != nil {
		return nil, err
	}
	// The CA key is not kept: a new etcd certificate means a new etcd CA, issued here.
	if err := writePKI(dir, files); err != nil {
		return nil, err
	}
	return p, nil
}

// args are the flags of a one-member etcd named name with its data in dataDir, serving its
// clients and its (only) peer on unix sockets in sockets (etcdsocket.go; etcd runs with that
// directory as its working directory) with this PKI: TLS only for clients, and only client
// certificates of its own CA admitted (etcd has no authorization of its own: any certificate it
// admits may read and write everything, so nothing but its apiserver holds one).
func (p *etcdPKI) args(name, dataDir string, sockets etcdSockets) []string {
	peerURL := "unixs://" + etcdPeerSocket
	return []string{
		"--name=" + name,
		"--data-dir=" + dataDir,
		"--listen-client-urls=" + sockets.clientURL(),
		// etcd wants an advertised URL in host:port form; nothing dials it (a one-member etcd,
		// whose only client is given the socket's path).
		"--advertise-client-urls=unixs://" + etcdClientSocket + ":0",
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=" + name + "=" + peerURL,
		"--cert-file=" + p.serverCert, "--key-file=" + p.serverKey,
		"--client-cert-auth", "--trusted-ca-file=" + p.caCert,
		"--peer-cert-file=" + p.serverCert, "--peer-key-file=" + p.serverKey,
		"--peer-client-cert-auth", "--peer-trusted-ca-file=" + p.caCert,
		// Loopback only and throwaway: skipping fsync keeps a laptop disk from being the
		// bottleneck. A killed process loses nothing (the page cache survives it); only a
		// machine crash could.
		"--unsafe-no-fsync",
		"--log-level=warn",
	}
}

// httpClient presents the apiserver's etcd client certificate to the etcd at endpoint (its
// unixs:// client URL): what the launcher's health checks use. Ask it for https://localhost/.
func (p *etcdPKI) httpClient(endpoint string) (*http.Client, error) {
	caPEM, err := os.ReadFile(p.caCert)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("etcd CA certificate does not parse")
	}
	cert, err := tls.LoadX509KeyPair(p.clientCert, p.clientKey)
	if err != nil {
		return nil, fmt.Errorf("etcd client certificate: %w", err)
	}
	return EtcdHTTPClient(endpoint, &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
}
