package mgmtcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestHostedEtcdAdmitsOnlyItsOwnClients: a hosted cluster's etcd speaks only TLS with a client
// certificate of its own CA; neither a missing certificate nor the etcd client certificate of
// another etcd (a management cluster's or another hosted cluster's: another etcd CA, made the
// same way) opens it.
func TestHostedEtcdAdmitsOnlyItsOwnClients(t *testing.T) {
	ctx, o := hostedEtcdTest(t, "starts a real etcd")
	e, err := StartHostedEtcd(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	mgmt, err := loadOrCreateEtcdPKI(filepath.Join(o.LogDir, "mgmt", "pki"))
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(e.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	get := func(certFile, keyFile string) error {
		cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		if certFile != "" {
			cert, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		c, err := EtcdHTTPClient(e.Endpoint, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return HTTPReady(c, "https://localhost/health")(ctx)
	}
	tests := []struct {
		name         string
		cert, key    string
		wantAdmitted bool
	}{
		{name: "its_own_client_certificate_is_admitted", cert: e.CertFile, key: e.KeyFile, wantAdmitted: true},
		{name: "no_client_certificate_is_refused"},
		{name: "a_management_etcd_client_certificate_is_refused", cert: mgmt.clientCert, key: mgmt.clientKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := get(tt.cert, tt.key)
			if (err == nil) != tt.wantAdmitted {
				t.Errorf("GET /health: %v, want admitted=%v", err, tt.wantAdmitted)
			}
		})
	}
	if resp, err := plaintextEtcdClient(t, e.Endpoint).Get("http://localhost/health"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plaintext GET /health answered %d", resp.StatusCode)
		}
	}
	t.Run("no_tcp_listener", func(t *testing.T) { checkEtcdHasNoTCPListener(t, e.Proc) })
	t.Run("another_user_cannot_connect", func(t *testing.T) { checkEtcdRefusesAnotherUser(t, e.Proc) })
}

// TestHostedEtcdSocketDirectoryIsRemoved: an etcd's socket directory goes with it, whether it
// is stopped or its launcher was killed (and the etcd with it, by its parent-death signal),
// when the next start on the same state directory finds the directory the lost one left.
func TestHostedEtcdSocketDirectoryIsRemoved(t *testing.T) {
	ctx, o := hostedEtcdTest(t, "starts a real etcd")
	socketDir := func(e *HostedEtcd) string {
		t.Helper()
		socket, err := EtcdSocketPath(e.Endpoint)
		if err != nil {
			t.Fatal(err)
		}
		return filepath.Dir(socket)
	}
	lost, err := StartHostedEtcd(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	// Its launcher is gone without a word: the process ends, nothing removes the directory.
	lost.Proc.Kill()
	lostDir := socketDir(lost)
	if _, err := os.Stat(lostDir); err != nil {
		t.Fatalf("the killed etcd's socket directory: %v, want it left until the next start", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(lostDir) })

	next, err := StartHostedEtcd(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(lostDir); !os.IsNotExist(err) {
		t.Errorf("the lost etcd's socket directory %s after the next start: %v, want removed", lostDir, err)
	}
	nextDir := socketDir(next)
	next.Stop()
	if _, err := os.Stat(nextDir); !os.IsNotExist(err) {
		t.Errorf("a stopped etcd's socket directory %s: %v, want removed", nextDir, err)
	}
}

// hostedEtcdTest skips t under -short (why says what it would start), and otherwise gives a
// context bounded at 5 minutes for t's life and the options of a hosted etcd named "hosted" in
// a new temporary directory, with the pinned etcd binary.
func hostedEtcdTest(t *testing.T, why string) (context.Context, HostedEtcdOptions) {
	t.Helper()
	if testing.Short() {
		t.Skip(why)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	_, etcd, err := KubeBinaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	return ctx, HostedEtcdOptions{Name: "hosted", Dir: filepath.Join(dir, "hosted"), LogDir: dir, EtcdPath: etcd}
}
