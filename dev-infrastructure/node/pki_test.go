package node

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(data)
	if b == nil {
		t.Fatalf("%s: no PEM", path)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPKIGivesEveryComponentTheIdentityKubernetesAuthorizes(t *testing.T) {
	dir := t.TempDir()
	if err := writePKI(dir, netip.MustParseAddr("10.250.0.1"), netip.MustParseAddr("10.96.0.1")); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(readCert(t, filepath.Join(dir, "ca.crt")))

	serving := readCert(t, filepath.Join(dir, "apiserver.crt"))
	for _, host := range []string{"10.250.0.1", "10.96.0.1", "127.0.0.1", "kubernetes.default.svc"} {
		if _, err := serving.Verify(x509.VerifyOptions{Roots: roots, DNSName: host}); err != nil {
			t.Errorf("apiserver certificate for %s: %v", host, err)
		}
	}
	tests := []struct {
		file, user, group string
	}{
		{"admin", "openhcp-admin", "system:masters"},
		{"kubelet", "system:node:" + NodeName, "system:nodes"},
		{"kube-scheduler", "system:kube-scheduler", ""},
		{"kube-controller-manager", "system:kube-controller-manager", ""},
		{"kube-proxy", "system:kube-proxy", ""},
		{"apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			c := readCert(t, filepath.Join(dir, tt.file+".crt"))
			if _, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Fatal(err)
			}
			if c.Subject.CommonName != tt.user {
				t.Errorf("user %q, want %q", c.Subject.CommonName, tt.user)
			}
			if tt.group != "" && !slices.Contains(c.Subject.Organization, tt.group) {
				t.Errorf("groups %v, want %q", c.Subject.Organization, tt.group)
			}
			if _, err := os.Stat(filepath.Join(dir, tt.file+".key")); err != nil {
				t.Error(err)
			}
		})
	}
	if !slices.ContainsFunc(serving.IPAddresses, func(ip net.IP) bool { return ip.Equal(net.IPv4(10, 250, 0, 1)) }) {
		t.Errorf("node IP missing from %v", serving.IPAddresses)
	}
}
