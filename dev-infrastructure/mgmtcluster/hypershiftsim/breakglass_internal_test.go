package hypershiftsim

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func testCSR(t *testing.T, tmpl *x509.CertificateRequest, usages ...certificatesv1.KeyUsage) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
		Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), Usages: usages}}
}

var customerPrefix = signerClasses[CustomerBreakGlassSignerClass].userPrefix

func TestValidateBreakGlassCSR(t *testing.T) {
	user := pkix.Name{CommonName: "system:customer-break-glass:alice", Organization: []string{"system:masters"}}
	for _, tc := range []struct {
		name    string
		csr     *certificatesv1.CertificateSigningRequest
		wantErr string
	}{
		{"break_glass_user_client_auth", testCSR(t, &x509.CertificateRequest{Subject: user}, certificatesv1.UsageClientAuth, certificatesv1.UsageDigitalSignature), ""},
		{"foreign_common_name", testCSR(t, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "test.example.com"}}, certificatesv1.UsageClientAuth), "invalid CN"},
		{"prefix_only", testCSR(t, &x509.CertificateRequest{Subject: pkix.Name{CommonName: customerPrefix}}, certificatesv1.UsageClientAuth), "invalid CN"},
		{"with_dns_names", testCSR(t, &x509.CertificateRequest{Subject: user, DNSNames: []string{"x"}}, certificatesv1.UsageClientAuth), "alternative names"},
		{"server_usage", testCSR(t, &x509.CertificateRequest{Subject: user}, certificatesv1.UsageClientAuth, certificatesv1.UsageServerAuth), "not allowed"},
		{"no_client_auth", testCSR(t, &x509.CertificateRequest{Subject: user}, certificatesv1.UsageDigitalSignature), "must include client auth"},
		{"not_pem", &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{Request: []byte("x")}}, "not a PEM"},
		{"sre_user_at_the_customer_signer", testCSR(t, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:sre-break-glass:alice"}}, certificatesv1.UsageClientAuth), "invalid CN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := validateBreakGlassCSR(tc.csr, customerPrefix)
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestHCPNamespaceOfSigner(t *testing.T) {
	for _, tc := range []struct {
		signer, want, class string
		ok                  bool
	}{
		{"hypershift.openshift.io/ocm-dev-abc-name.customer-break-glass", "ocm-dev-abc-name", CustomerBreakGlassSignerClass, true},
		{"hypershift.openshift.io/ocm-dev-abc-name.sre-break-glass", "ocm-dev-abc-name", SREBreakGlassSignerClass, true},
		{"hypershift.openshift.io/ocm-dev-abc-name.other-break-glass", "", "", false},
		{"kubernetes.io/kube-apiserver-client", "", "", false},
		{"hypershift.openshift.io/.customer-break-glass", "", "", false},
	} {
		got, class, ok := hcpNamespaceOfSigner(tc.signer)
		if (got != tc.want || class != tc.class) && tc.ok || ok != tc.ok {
			t.Errorf("%s: got %q %q %v, want %q %q %v", tc.signer, got, class, ok, tc.want, tc.class, tc.ok)
		}
	}
	if SignerName("ns") != "hypershift.openshift.io/ns.customer-break-glass" {
		t.Fatal("SignerName and hcpNamespaceOfSigner disagree")
	}
}

func TestSignClientCertHonoursExpirationAndTheSignerLifetime(t *testing.T) {
	now := time.Now()
	caPEM, keyPEM, err := newCA("signer", now)
	if err != nil {
		t.Fatal(err)
	}
	csr := testCSR(t, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:customer-break-glass:a"}}, certificatesv1.UsageClientAuth)
	cr, err := validateBreakGlassCSR(csr, customerPrefix)
	if err != nil {
		t.Fatal(err)
	}
	ca, _, _ := parseCA(caPEM, keyPEM)
	for _, tc := range []struct {
		name string
		exp  *int32
		want time.Time
	}{
		{"asked_ten_minutes", ptr32(600), now.Add(10 * time.Minute)},
		{"nothing_asked", nil, now.Add(defaultCSRExpiration)},
		{"beyond_the_signer", ptr32(int32(2 * caValidity / time.Second)), ca.NotAfter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := signClientCert(caPEM, keyPEM, cr, tc.exp, now)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := pem.Decode(p)
			leaf, _ := x509.ParseCertificate(b.Bytes)
			if d := leaf.NotAfter.Sub(tc.want); d > time.Second || d < -time.Second {
				t.Fatalf("NotAfter = %s, want %s", leaf.NotAfter, tc.want)
			}
			pool := x509.NewCertPool()
			pool.AddCert(ca)
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, CurrentTime: now}); err != nil {
				t.Fatalf("signed certificate does not chain: %v", err)
			}
		})
	}
}

func ptr32(v int32) *int32 { return &v }

func TestPKIEvents(t *testing.T) {
	hc := func(rv string, deleting bool) *hyperv1.HostedCluster {
		o := &hyperv1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "hc", ResourceVersion: rv}}
		if deleting {
			o.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
		}
		return o
	}
	p := pkiEvents()
	for _, tc := range []struct {
		name string
		got  bool
		want bool
	}{
		{"create", p.Create(event.CreateEvent{Object: hc("1", false)}), true},
		{"delete", p.Delete(event.DeleteEvent{Object: hc("1", false)}), true},
		{"generic", p.Generic(event.GenericEvent{Object: hc("1", false)}), true},
		{"status_write", p.Update(event.UpdateEvent{ObjectOld: hc("1", false), ObjectNew: hc("2", false)}), false},
		{"write_while_deleting", p.Update(event.UpdateEvent{ObjectOld: hc("2", true), ObjectNew: hc("3", true)}), false},
		{"deletion_set", p.Update(event.UpdateEvent{ObjectOld: hc("1", false), ObjectNew: hc("2", true)}), true},
		{"resync", p.Update(event.UpdateEvent{ObjectOld: hc("5", false), ObjectNew: hc("5", false)}), true},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: passed = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}
