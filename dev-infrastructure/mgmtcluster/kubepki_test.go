package mgmtcluster

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/openhcp/openhcp/internal/pki"
)

// The apiserver's serving certificate carries the extra names a caller reaches it by (make
// deploy's second stamp: a Service of the node), and a kept PKI is reused as it is.
func TestKubePKIServingCertificateNamesServerNames(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	svc := "mgmt-2-apiserver.openhcp-outside.svc"
	p, err := loadOrCreateKubePKI(dir, svc)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pki.ReadCertificate(p.servingCertPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := cert.VerifyHostname(svc); err != nil {
		t.Errorf("serving certificate names %v: %v", cert.DNSNames, err)
	}
	if !slices.Contains(cert.DNSNames, "localhost") {
		t.Errorf("serving certificate names %v, want localhost too", cert.DNSNames)
	}
	if _, err := loadOrCreateKubePKI(dir); err != nil {
		t.Fatal(err)
	}
	again, err := pki.ReadCertificate(p.servingCertPath)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Equal(cert) {
		t.Error("a kept PKI was issued again")
	}
}
