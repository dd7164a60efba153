package node

import (
	"crypto/x509"
	"encoding/pem"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteClientCertificateIssuesAPlainUserOfTheNodeCA: the certificate chains to the node's CA
// as a client, names the user and no group (RBAC grants it only what every authenticated user
// has), and the CA file written beside it is the node's.
func TestWriteClientCertificateIssuesAPlainUserOfTheNodeCA(t *testing.T) {
	n := &Node{Dir: t.TempDir()}
	if err := writePKI(filepath.Join(n.Dir, "pki"), DefaultNodeIP, netip.MustParseAddr("10.96.0.1")); err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, caFile, err := n.WriteClientCertificate(filepath.Join(t.TempDir(), "out"), "probe", "openhcp-monitor")
	if err != nil {
		t.Fatal(err)
	}
	read := func(f string) []byte {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	nodeCA, ca := read(filepath.Join(n.Dir, "pki", "ca.crt")), read(caFile)
	if string(nodeCA) != string(ca) {
		t.Errorf("%s is not the node's CA", caFile)
	}
	if info, err := os.Stat(keyFile); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("key %s: %v, mode %v; want 0600", keyFile, err, info.Mode())
	}
	block, _ := pem.Decode(read(certFile))
	if block == nil {
		t.Fatalf("%s holds no PEM", certFile)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "openhcp-monitor" || len(cert.Subject.Organization) != 0 {
		t.Errorf("subject %v, want CN openhcp-monitor and no group", cert.Subject)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("not a client certificate of the node's CA: %v", err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Errorf("the client certificate also serves")
	}
}
