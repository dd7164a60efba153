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
	if testing.Short() {
		t.Skip("starts a real etcd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, etcd, err := KubeBinaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	e, err := StartHostedEtcd(ctx, HostedEtcdOptions{Name: "hosted", Dir: filepath.Join(dir, "hosted"), LogDir: dir, EtcdPath: etcd})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	mgmt, err := loadOrCreateEtcdPKI(filepath.Join(dir, "mgmt", "pki"))
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
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		return HTTPReady(c, e.Endpoint+"/health")(ctx)
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
	if _, err := http.Get("http" + e.Endpoint[len("https"):] + "/health"); err == nil {
		t.Errorf("plaintext GET /health answered")
	}
}
