package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
)

var configMapGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// TestBreakGlassCredentialsThroughTheFrontend requests an admin credential through ARM, checks
// that its client certificate chains (crypto/x509, client-auth usage) to the hosted cluster's
// client CA bundle as the management cluster publishes it, revokes all credentials, checks that
// the old certificate no longer chains to the new bundle, and that a new credential does.
func TestBreakGlassCredentialsThroughTheFrontend(t *testing.T) {
	sub, rg := uuid.NewString(), "rg-breakglass"
	registerSubscription(t, sub)
	path := clusterPath(sub, rg, "breakglass")
	cl, mc := createCluster(t, path, clusterBody(sub, rg))
	hcs := hostedClusters(t, mc, cl.GetId())
	if len(hcs) != 1 {
		t.Fatalf("%d HostedClusters for %s", len(hcs), cl.GetId())
	}
	hcpNS := hcs[0].GetNamespace() + "-" + hcs[0].GetName()
	caller := uuid.NewString()

	// 2026-09-01-preview takes a body (the customer's CSR is optional); earlier versions none.
	request := func(t *testing.T, ver string, body any) (asyncURL, location string) {
		t.Helper()
		r := armAs(t, http.MethodPost, path+"/requestAdminCredential?api-version="+ver, caller, body)
		if r.Status != http.StatusAccepted || r.Header.Get("Location") == "" || r.Header.Get("Azure-AsyncOperation") == "" || r.Header.Get("Retry-After") == "" {
			t.Fatalf("requestAdminCredential: got %d with Location %q, want 202 with Location, Azure-AsyncOperation and Retry-After: %s",
				r.Status, r.Header.Get("Location"), r.Raw)
		}
		return r.Header.Get("Azure-AsyncOperation"), r.Header.Get("Location")
	}
	kubeconfigOf := func(t *testing.T, asyncURL, location string) *x509.Certificate {
		t.Helper()
		if final := waitOperation(t, asyncURL, 2*time.Minute); final["status"] != "Succeeded" {
			t.Fatalf("requestAdminCredential ended %v: %v", final["status"], final["error"])
		}
		if other := armAs(t, http.MethodGet, location, uuid.NewString(), nil); other.Status != http.StatusNotFound {
			t.Fatalf("operation result read by another caller: got %d, want 404: %s", other.Status, other.Raw)
		}
		res := armAs(t, http.MethodGet, location, caller, nil)
		if res.Status != http.StatusOK {
			t.Fatalf("operation result: got %d, want 200: %s", res.Status, res.Raw)
		}
		kc, _ := res.Body["kubeconfig"].(string)
		exp, err := time.Parse(time.RFC3339, res.Body["expirationTimestamp"].(string))
		if kc == "" || err != nil {
			t.Fatalf("result has no kubeconfig or expirationTimestamp: %v", res.Body)
		}
		cfg, err := clientcmd.Load([]byte(kc))
		if err != nil {
			t.Fatalf("kubeconfig does not parse: %v", err)
		}
		cur := cfg.Contexts[cfg.CurrentContext]
		auth := cfg.AuthInfos[cur.AuthInfo]
		pair, err := tls.X509KeyPair(auth.ClientCertificateData, auth.ClientKeyData)
		if err != nil {
			t.Fatalf("kubeconfig's certificate and key do not match: %v", err)
		}
		leaf, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		if !leaf.NotAfter.Equal(exp) || time.Until(exp) > 2*time.Hour || time.Until(exp) <= 0 {
			t.Fatalf("certificate expires %s, result says %s; want a short expiry in the future", leaf.NotAfter, exp)
		}
		if !strings.HasPrefix(leaf.Subject.CommonName, "system:customer-break-glass:") {
			t.Fatalf("certificate CN = %q", leaf.Subject.CommonName)
		}
		if root := configMapData(t, mc, hcpNS, "root-ca"); string(cfg.Clusters[cur.Cluster].CertificateAuthorityData) != root {
			t.Fatal("the kubeconfig does not trust the hosted cluster's root CA")
		}
		return leaf
	}
	verify := func(leaf *x509.Certificate) error {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(configMapData(t, mc, hcpNS, "total-client-ca"))) {
			t.Fatal("the client CA bundle holds no certificate")
		}
		_, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		return err
	}

	asyncURL, location := request(t, "2026-09-01-preview", map[string]any{})
	first := kubeconfigOf(t, asyncURL, location)
	if err := verify(first); err != nil {
		t.Fatalf("the issued certificate does not chain to the hosted cluster's client CA bundle: %v", err)
	}

	rv := armAs(t, http.MethodPost, path+"/revokeCredentials?api-version=2026-09-01-preview", caller, nil)
	if rv.Status != http.StatusAccepted || rv.Header.Get("Location") == "" || rv.Header.Get("Azure-AsyncOperation") == "" {
		t.Fatalf("revokeCredentials: got %d, want 202 with Location and Azure-AsyncOperation: %s", rv.Status, rv.Raw)
	}
	if again := armAs(t, http.MethodPost, path+"/requestAdminCredential?api-version=2025-12-23-preview", caller, nil); again.Status != http.StatusConflict {
		t.Fatalf("requestAdminCredential during a revocation: got %d, want 409: %s", again.Status, again.Raw)
	}
	if final := waitOperation(t, rv.Header.Get("Azure-AsyncOperation"), 2*time.Minute); final["status"] != "Succeeded" {
		t.Fatalf("revokeCredentials ended %v: %v", final["status"], final["error"])
	}
	if res := armAs(t, http.MethodGet, rv.Header.Get("Location"), caller, nil); res.Status != http.StatusNoContent {
		t.Fatalf("revokeCredentials result: got %d, want 204: %s", res.Status, res.Raw)
	}
	err := verify(first)
	if err == nil {
		t.Fatal("the revoked certificate still chains to the hosted cluster's client CA bundle")
	}
	t.Logf("revoked certificate no longer chains: %v", err)
	if old := armAs(t, http.MethodGet, location, caller, nil); old.Status != http.StatusConflict {
		t.Fatalf("result of the revoked credential: got %d, want 409: %s", old.Status, old.Raw)
	}

	asyncURL, location = request(t, "2024-06-10-preview", nil)
	if err := verify(kubeconfigOf(t, asyncURL, location)); err != nil {
		t.Fatalf("a credential issued after the revocation does not chain: %v", err)
	}
}

// armAs is arm with the caller ARM names in x-ms-client-object-id.
func armAs(t *testing.T, method, pathOrURL, objectID string, body any) armResponse {
	t.Helper()
	u := pathOrURL
	if strings.HasPrefix(u, "/") {
		u = region.Info.Frontend.URL + u
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("x-ms-client-object-id", objectID)
	req.Header.Set("x-ms-correlation-request-id", uuid.NewString())
	return doARM(t, req)
}

func configMapData(t *testing.T, mc localregion.ManagementClusterInfo, ns, name string) string {
	t.Helper()
	cm, err := kube(t, mc).Resource(configMapGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("configmap %s/%s on %s: %v", ns, name, mc.Name, err)
	}
	data, _, _ := unstructuredString(cm.Object, "data", "ca.crt")
	return data
}

func unstructuredString(obj map[string]any, fields ...string) (string, bool, error) {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		cur = m[f]
	}
	s, ok := cur.(string)
	return s, ok, nil
}
