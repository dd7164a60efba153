package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
)

// TestHcpctlBreakGlass asks for an SRE break-glass credential through hcpctl against the running
// region, as the customer break-glass test does through ARM: the management cluster's signer
// signs it, and the certificate is checked against the client CA bundle the hosted cluster's
// kube-apiserver would trust. The simulator runs no hosted kube-apiserver, so the kubeconfig is
// not used against one; its subject (the SRE and the group), its lifetime and its chain are what
// is verified. Then it is listed, revoked, and seen revoked (no longer chaining to the bundle).
func TestHcpctlBreakGlass(t *testing.T) {
	bin := hcpctlBinary(t)
	sub, rg := uuid.NewString(), "rg-hcpctl-breakglass"
	registerSubscription(t, sub)
	path := clusterPath(sub, rg, "sre-breakglass")
	cl, mc := createCluster(t, path, clusterBody(sub, rg))
	hcs := hostedClusters(t, mc, cl.GetId())
	if len(hcs) != 1 {
		t.Fatalf("%d HostedClusters for %s", len(hcs), cl.GetId())
	}
	hcpNS := hcs[0].GetNamespace() + "-" + hcs[0].GetName()
	reason := "e2e break-glass " + uuid.NewString()
	kcFile := filepath.Join(t.TempDir(), "sre.kubeconfig")

	// Refusals first: they name the flag, and a read-only SRE cannot ask for admin.
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"ttl_out_of_bounds_names_ttl", []string{"--as", "sre-admin", "breakglass", "request", cl.GetId(), "--ttl", "9h", "--kubeconfig", kcFile, "--reason", reason}, 1, "--ttl"},
		{"readonly_may_not_ask_for_admin", []string{"--as", "sre-readonly", "breakglass", "request", cl.GetId(), "--access", "admin", "--kubeconfig", kcFile, "--reason", reason}, 1, "Forbidden"},
		{"unknown_cluster_is_named", []string{"--as", "sre-admin", "breakglass", "request", "0000000000000000000000000000000v", "--kubeconfig", kcFile, "--reason", reason}, 1, "0000000000000000000000000000000v"},
		{"kubeconfig_is_required", []string{"breakglass", "request", cl.GetId(), "--reason", reason}, 2, "--kubeconfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := hcpctl(t, bin, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, want %d naming %q:\n%s%s", code, tc.code, tc.want, out, stderr)
			}
		})
	}
	if _, err := os.Stat(kcFile); !os.IsNotExist(err) {
		t.Fatalf("a refused request left %s: %v", kcFile, err)
	}

	// Admin access waits for a second sre-admin, and the requester cannot be the second.
	out, stderr, code := hcpctl(t, bin, "--as", "sre-admin", "breakglass", "request", path, "--access", "admin", "--ttl", "30m", "--kubeconfig", kcFile, "--reason", reason, "-o", "json")
	var pending adminapi.BreakGlassCredential
	if code != 0 || json.Unmarshal([]byte(out), &pending) != nil || pending.State != adminapi.StateAwaitingApproval {
		t.Fatalf("admin request: exit %d, want awaiting-approval:\n%s%s", code, out, stderr)
	}
	if _, stderr, code := hcpctl(t, bin, "--as", "sre-admin", "breakglass", "approve", pending.ID, "--reason", reason); code == 0 || !strings.Contains(stderr, "Forbidden") {
		t.Fatalf("self-approval: exit %d:\n%s", code, stderr)
	}
	if _, err := os.Stat(kcFile); !os.IsNotExist(err) {
		t.Fatalf("an unapproved request left %s: %v", kcFile, err)
	}

	out, stderr, code = hcpctl(t, bin, "--as", "sre-admin", "breakglass", "request", path, "--access", "read-only", "--ttl", "30m", "--kubeconfig", kcFile, "--reason", reason, "-o", "json")
	if code != 0 {
		t.Fatalf("request: exit %d:\n%s%s", code, out, stderr)
	}
	var cred adminapi.BreakGlassCredential
	if err := json.Unmarshal([]byte(out), &cred); err != nil || cred.ID == "" || cred.Kubeconfig != "" {
		t.Fatalf("request output (no kubeconfig on the terminal): %v\n%s", err, out)
	}
	fi, err := os.Stat(kcFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig file: %v mode %v, want 0600", err, fi.Mode())
	}
	cfg, err := clientcmd.LoadFromFile(kcFile)
	if err != nil {
		t.Fatal(err)
	}
	cur := cfg.Contexts[cfg.CurrentContext]
	auth := cfg.AuthInfos[cur.AuthInfo]
	pair, err := tls.X509KeyPair(auth.ClientCertificateData, auth.ClientKeyData)
	if err != nil {
		t.Fatalf("kubeconfig's certificate and key: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	// The region's SRE certificates name the person "sre-admin" (region.json admin.sres).
	if leaf.Subject.CommonName != "system:sre-break-glass:"+cred.Person || cred.Person == "" ||
		len(leaf.Subject.Organization) != 1 || leaf.Subject.Organization[0] != "openhcp:sre-break-glass:read-only" {
		t.Fatalf("certificate subject %s for person %q", leaf.Subject, cred.Person)
	}
	// The signer backdates NotBefore for clock skew (as Kubernetes' signers do), so the TTL is
	// NotAfter less the signing time, just before now.
	if left := time.Until(leaf.NotAfter); left > 30*time.Minute || left < 28*time.Minute || cred.ExpirationTime == nil || !cred.ExpirationTime.Equal(leaf.NotAfter) {
		t.Fatalf("certificate expires in %s (NotAfter %s), credential says %v; want 30m from its signing", left, leaf.NotAfter, cred.ExpirationTime)
	}
	if root := configMapData(t, mc, hcpNS, "root-ca"); string(cfg.Clusters[cur.Cluster].CertificateAuthorityData) != root {
		t.Fatal("the kubeconfig does not trust the hosted cluster's root CA")
	}
	verify := func() error {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(configMapData(t, mc, hcpNS, "total-client-ca"))) {
			t.Fatal("the client CA bundle holds no certificate")
		}
		_, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		return err
	}
	if err := verify(); err != nil {
		t.Fatalf("the hosted cluster's client CA bundle does not trust the certificate: %v", err)
	}

	out, stderr, code = hcpctl(t, bin, "breakglass", "list", "--cluster", cl.GetId())
	if code != 0 || !strings.HasPrefix(out, "ID") || !strings.Contains(out, cred.ID) || !strings.Contains(out, "issued") {
		t.Fatalf("list: exit %d:\n%s%s", code, out, stderr)
	}
	t.Logf("$ hcpctl breakglass list --cluster %s\n%s", cl.GetId(), out)

	out, stderr, code = hcpctl(t, bin, "--as", "sre-admin", "breakglass", "revoke", "--credential", cred.ID, "--reason", reason)
	if code != 0 || !strings.Contains(out, cl.GetId()) {
		t.Fatalf("revoke: exit %d:\n%s%s", code, out, stderr)
	}
	out, _, _ = hcpctl(t, bin, "breakglass", "list", "--cluster", cl.GetId())
	if strings.Contains(out, cred.ID) {
		t.Fatalf("revoked credential still listed as active:\n%s", out)
	}
	eventually(t, 2*time.Minute, "credential revoked and no longer trusted", func() error {
		out, stderr, code := hcpctl(t, bin, "breakglass", "list", "--cluster", cl.GetId(), "--all", "-o", "json")
		var l adminapi.BreakGlassList
		if code != 0 || json.Unmarshal([]byte(out), &l) != nil || len(l.Credentials) != 1 || l.Credentials[0].ID != cred.ID {
			return fmt.Errorf("list --all: exit %d %s%s", code, out, stderr)
		}
		if l.Credentials[0].State != "revoked" {
			return fmt.Errorf("state %s", l.Credentials[0].State)
		}
		if verify() == nil {
			return fmt.Errorf("the client CA bundle still trusts the certificate")
		}
		return nil
	})
	out, _, _ = hcpctl(t, bin, "audit", "--route", "POST /admin/v1/breakglass", "--limit", "20")
	if !strings.Contains(out, "hcpOpenShiftClusters/sre-breakglass") {
		t.Fatalf("the request (by ARM ID) is not in the audit log:\n%s", out)
	}
}
