package breakglass

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// signer is a throwaway CA for the tests.
func signer(t *testing.T) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "signer"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	return ca, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func sign(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, csrPEM []byte, usage x509.ExtKeyUsage, otherKey bool) []byte {
	t.Helper()
	req, err := ParseRequest(csrPEM)
	if err != nil {
		t.Fatal(err)
	}
	pub := req.PublicKey
	if otherKey {
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		pub = &k.PublicKey
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: req.Subject, NotBefore: time.Now().Add(-time.Minute),
		NotAfter: time.Now().Add(30 * time.Minute), ExtKeyUsage: []x509.ExtKeyUsage{usage}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, pub, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestNewRequestHasTheBreakGlassSubject(t *testing.T) {
	key, csr, err := NewRequest("abc")
	if err != nil {
		t.Fatal(err)
	}
	req, err := ParseRequest(csr)
	if err != nil {
		t.Fatal(err)
	}
	if req.Subject.CommonName != "system:customer-break-glass:abc" || len(req.Subject.Organization) != 1 || req.Subject.Organization[0] != "system:masters" {
		t.Fatalf("subject = %v", req.Subject)
	}
	if _, err := x509.ParsePKCS8PrivateKey(key); err != nil {
		t.Fatalf("key is not PKCS#8: %v", err)
	}
	if !ValidUser(Username(csr)) || ValidUser(UserPrefix) || ValidUser("admin") {
		t.Fatal("ValidUser disagrees with the signer's rule")
	}
}

func TestParseRequest(t *testing.T) {
	_, good, _ := NewRequest("x")
	tampered := []byte(strings.Replace(string(good), string(good[80:90]), "AAAAAAAAAA", 1))
	for _, tc := range []struct {
		name    string
		in      []byte
		wantErr string
	}{
		{"valid", good, ""},
		{"not_pem", []byte("hello"), "not a PEM"},
		{"certificate_not_request", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1}}), "not a PEM"},
		{"two_blocks", append(append([]byte{}, good...), good...), "more than one"},
		{"tampered", tampered, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRequest(tc.in)
			if tc.name == "tampered" {
				if err == nil {
					t.Fatal("a tampered request parsed with a valid signature")
				}
				return
			}
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestCheckIssuedAndKubeconfig(t *testing.T) {
	ca, caKey, caPEM := signer(t)
	key, csr, _ := NewRequest("u")
	for _, tc := range []struct {
		name    string
		cert    []byte
		wantErr string
	}{
		{"client_cert_for_the_key", sign(t, ca, caKey, csr, x509.ExtKeyUsageClientAuth, false), ""},
		{"another_key", sign(t, ca, caKey, csr, x509.ExtKeyUsageClientAuth, true), "does not certify"},
		{"server_usage", sign(t, ca, caKey, csr, x509.ExtKeyUsageServerAuth, false), "not for client"},
		{"garbage", []byte("x"), "not PEM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leaf, err := CheckIssued(csr, tc.cert)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			kc, err := Kubeconfig("c1", "https://api.example:443", caPEM, tc.cert, key)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := clientcmd.Load([]byte(kc))
			if err != nil {
				t.Fatal(err)
			}
			cur := cfg.Contexts[cfg.CurrentContext]
			if cfg.Clusters[cur.Cluster].Server != "https://api.example:443" || string(cfg.Clusters[cur.Cluster].CertificateAuthorityData) != string(caPEM) {
				t.Fatalf("cluster = %+v", cfg.Clusters[cur.Cluster])
			}
			if _, err := tls.X509KeyPair(cfg.AuthInfos[cur.AuthInfo].ClientCertificateData, cfg.AuthInfos[cur.AuthInfo].ClientKeyData); err != nil {
				t.Fatalf("kubeconfig's certificate and key: %v", err)
			}
			if leaf.Subject.CommonName != "system:customer-break-glass:u" {
				t.Fatalf("CN = %q", leaf.Subject.CommonName)
			}
			// A customer's own request: the kubeconfig carries no key.
			kc, _ = Kubeconfig("c1", "https://api.example:443", caPEM, tc.cert, nil)
			cfg, _ = clientcmd.Load([]byte(kc))
			if len(cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo].ClientKeyData) != 0 {
				t.Fatal("kubeconfig without a key carries one")
			}
		})
	}
}

// TestNewSRERequest: an SRE request names the person under the customer signer's prefix and
// carries the kube group of its access; what cannot name a subject is refused.
func TestNewSRERequest(t *testing.T) {
	for _, tc := range []struct {
		name, person string
		access       csv1.SREAccess
		wantO        string
		ok           bool
	}{
		{"admin_is_not_system_masters", "alice", csv1.SREAccess_SRE_ACCESS_ADMIN, "openhcp:sre-break-glass:admin", true},
		{"read_only", "bob.smith@example", csv1.SREAccess_SRE_ACCESS_READ_ONLY, "openhcp:sre-break-glass:read-only", true},
		{"unspecified_access", "alice", csv1.SREAccess_SRE_ACCESS_UNSPECIFIED, "", false},
		{"empty_person", "", csv1.SREAccess_SRE_ACCESS_ADMIN, "", false},
		{"person_with_comma", "alice,O=system:masters", csv1.SREAccess_SRE_ACCESS_READ_ONLY, "", false},
		{"person_too_long", strings.Repeat("a", 129), csv1.SREAccess_SRE_ACCESS_READ_ONLY, "", false},
		// The one rule for a person's name (identity.ValidPerson), as the admin API admits them.
		{"person_named_like_a_service", "Cluster-Service", csv1.SREAccess_SRE_ACCESS_READ_ONLY, "", false},
		{"person_ending_with_a_dot", "sre.", csv1.SREAccess_SRE_ACCESS_READ_ONLY, "", false},
		{"person_starting_with_a_dash", "-alice", csv1.SREAccess_SRE_ACCESS_READ_ONLY, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, csrPEM, err := NewSRERequest(tc.person, tc.access)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v", err)
			}
			if !tc.ok {
				return
			}
			req, err := ParseRequest(csrPEM)
			if err != nil || len(key) == 0 {
				t.Fatalf("parse: %v", err)
			}
			if req.Subject.CommonName != "system:sre-break-glass:"+tc.person || !ValidUser(req.Subject.CommonName) ||
				len(req.Subject.Organization) != 1 || req.Subject.Organization[0] != tc.wantO {
				t.Fatalf("subject %s", req.Subject)
			}
		})
	}
}
