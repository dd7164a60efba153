package hypershiftsim_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"testing"
	"time"

	certificatesv1alpha1 "github.com/openshift/hypershift/api/certificates/v1alpha1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/hypershiftsim"
)

// TestBreakGlassSignersAreSeparate: a hosted control plane has a customer and an SRE
// break-glass signer, both trusted by its client CA bundle. Revoking one class rotates only
// that signer: its certificates stop verifying against the published bundle, the other class's
// still verify; and the reverse.
func TestBreakGlassSignersAreSeparate(t *testing.T) {
	ns := newNamespace(t, "bg-signers")
	hc := hypershiftsim.ExampleHostedCluster(ns, "hc", image4197)
	ctx := context.Background()
	if err := k8s.Create(ctx, hc); err != nil {
		t.Fatal(err)
	}
	hcpNS := hypershiftsim.ControlPlaneNamespace(types.NamespacedName{Namespace: ns, Name: "hc"})

	seq := 0
	issue := func(t *testing.T, class, cn string) *x509.Certificate {
		t.Helper()
		seq++
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn}}, key)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("bg-%d", seq)
		exp := int32(3600)
		csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), SignerName: hypershiftsim.SignerNameOf(hcpNS, class),
			ExpirationSeconds: &exp, Usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}}}
		if err := k8s.Create(ctx, csr); err != nil {
			t.Fatal(err)
		}
		// The control-plane namespace appears with the HostedCluster's PKI; wait for it.
		approval := &certificatesv1alpha1.CertificateSigningRequestApproval{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: hcpNS}}
		deadline := time.Now().Add(30 * time.Second)
		for err := k8s.Create(ctx, approval); err != nil; err = k8s.Create(ctx, approval) {
			if time.Now().After(deadline) {
				t.Fatalf("create approval: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		got := eventually(t, csr, 30*time.Second, func(c *certificatesv1.CertificateSigningRequest) error {
			if len(c.Status.Certificate) == 0 {
				return fmt.Errorf("%s (%s) not signed: %+v", name, class, c.Status.Conditions)
			}
			return nil
		})
		block, _ := pem.Decode(got.Status.Certificate)
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return cert
	}
	verifies := func(t *testing.T, cert *x509.Certificate) bool {
		t.Helper()
		var cm corev1.ConfigMap
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: hcpNS, Name: hypershiftsim.ClientCABundleConfigMap}, &cm); err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM([]byte(cm.Data[hypershiftsim.CABundleKey]))
		_, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		return err == nil
	}
	revoke := func(t *testing.T, class string) {
		t.Helper()
		seq++
		crr := &certificatesv1alpha1.CertificateRevocationRequest{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("revoke-%d", seq), Namespace: hcpNS},
			Spec: certificatesv1alpha1.CertificateRevocationRequestSpec{SignerClass: class}}
		if err := k8s.Create(ctx, crr); err != nil {
			t.Fatal(err)
		}
		eventually(t, crr, 30*time.Second, func(c *certificatesv1alpha1.CertificateRevocationRequest) error {
			if !meta.IsStatusConditionTrue(c.Status.Conditions, certificatesv1alpha1.PreviousCertificatesRevokedType) {
				return errors.New("previous certificates not revoked yet")
			}
			return nil
		})
	}

	customer := issue(t, hypershiftsim.CustomerBreakGlassSignerClass, "system:customer-break-glass:c1")
	sre := issue(t, hypershiftsim.SREBreakGlassSignerClass, "system:sre-break-glass:alice")
	if !verifies(t, customer) || !verifies(t, sre) {
		t.Fatalf("before any revocation: customer verifies %t, SRE verifies %t; want both", verifies(t, customer), verifies(t, sre))
	}
	if customer.Issuer.String() == sre.Issuer.String() {
		t.Fatalf("customer and SRE certificates have the same issuer %s", customer.Issuer)
	}

	t.Run("revoking_sre_keeps_customer", func(t *testing.T) {
		revoke(t, hypershiftsim.SREBreakGlassSignerClass)
		if verifies(t, sre) {
			t.Error("the SRE certificate still verifies after the SRE signer was revoked")
		}
		if !verifies(t, customer) {
			t.Error("the customer certificate no longer verifies after the SRE signer was revoked")
		}
	})
	sre2 := issue(t, hypershiftsim.SREBreakGlassSignerClass, "system:sre-break-glass:alice")
	t.Run("revoking_customer_keeps_sre", func(t *testing.T) {
		revoke(t, hypershiftsim.CustomerBreakGlassSignerClass)
		if verifies(t, customer) {
			t.Error("the customer certificate still verifies after the customer signer was revoked")
		}
		if !verifies(t, sre2) {
			t.Error("the SRE certificate issued after the SRE revocation no longer verifies after the customer signer was revoked")
		}
	})
	t.Run("signer_refuses_the_other_class_user", func(t *testing.T) {
		seq++
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		der, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:customer-break-glass:x"}}, key)
		exp := int32(3600)
		name := fmt.Sprintf("bg-%d", seq)
		csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), SignerName: hypershiftsim.SignerNameOf(hcpNS, hypershiftsim.SREBreakGlassSignerClass),
			ExpirationSeconds: &exp, Usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}}}
		if err := k8s.Create(ctx, csr); err != nil {
			t.Fatal(err)
		}
		if err := k8s.Create(ctx, &certificatesv1alpha1.CertificateSigningRequestApproval{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: hcpNS}}); err != nil {
			t.Fatal(err)
		}
		eventually(t, csr, 30*time.Second, func(c *certificatesv1.CertificateSigningRequest) error {
			for _, cond := range c.Status.Conditions {
				if cond.Type == certificatesv1.CertificateFailed && cond.Status == corev1.ConditionTrue {
					return nil
				}
			}
			if len(c.Status.Certificate) > 0 {
				return errors.New("the SRE signer signed a customer user name")
			}
			return errors.New("not refused yet")
		})
	})
}
