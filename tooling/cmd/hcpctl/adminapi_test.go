package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// adminAPI serves h as a stand-in for the admin API over TLS on loopback and returns the
// global flags that point hcpctl at it (--admin-url, --ca, --cert, --key) and the files.
func adminAPI(t *testing.T, h http.Handler) (args []string, caFile, certFile, keyFile string) {
	t.Helper()
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	caFile, certFile, keyFile = filepath.Join(dir, "ca.crt"), filepath.Join(dir, "alice.crt"), filepath.Join(dir, "alice.key")
	write := func(path string, typ string, der []byte) {
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(caFile, "CERTIFICATE", srv.Certificate().Raw)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "alice", Organization: []string{"sre-admin"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	write(certFile, "CERTIFICATE", der)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write(keyFile, "PRIVATE KEY", keyDER)
	// httptest's certificate names example.com (and the loopback addresses); the region's name
	// only their service, so hcpctl asks for a name when it dials an address.
	return []string{"--admin-url", srv.URL, "--admin-server-name", "example.com", "--ca", caFile, "--cert", certFile, "--key", keyFile}, caFile, certFile, keyFile
}
