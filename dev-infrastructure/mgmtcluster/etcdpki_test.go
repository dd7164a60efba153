package mgmtcluster

import (
	"crypto/x509"
	"testing"

	"github.com/openhcp/openhcp/internal/pki"
)

// TestIssueEtcdPKINamesTheServiceAnEtcdPodIsReachedBy: the PKI make deploy gives the hosted etcd
// pod is the one the launcher's etcds use (their own CA, the apiserver's client certificate),
// with the Service names its clients dial in the serving certificate besides loopback; asking
// again for another name reissues it, the same names keep it.
func TestIssueEtcdPKINamesTheServiceAnEtcdPodIsReachedBy(t *testing.T) {
	dir := t.TempDir()
	const svc = "hosted-etcd.hypershift.svc"
	f, err := IssueEtcdPKI(dir, svc)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := pki.ReadCertificate(f.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	server, err := pki.ReadCertificate(f.ServerCert)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{svc, "127.0.0.1", "localhost"} {
		if _, err := server.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("serving certificate for %s: %v", name, err)
		}
	}
	client, err := pki.ReadCertificate(f.ClientCert)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}

	same, err := IssueEtcdPKI(dir, svc)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := pki.ReadCertificate(same.CA); !again.Equal(ca) {
		t.Error("the same names reissued the PKI")
	}
	const other = "hosted-etcd.other.svc"
	moved, err := IssueEtcdPKI(dir, other)
	if err != nil {
		t.Fatal(err)
	}
	server, err = pki.ReadCertificate(moved.ServerCert)
	if err != nil {
		t.Fatal(err)
	}
	if err := server.VerifyHostname(other); err != nil {
		t.Errorf("asked for %s: %v", other, err)
	}
}
