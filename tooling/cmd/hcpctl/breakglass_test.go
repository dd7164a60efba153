package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
)

// TestBreakGlassOpenWritesAGatewayKubeconfig: `breakglass open` writes (0600, never over
// another file) a kubeconfig whose server is the session's URL at the gateway, whose CA is the
// one hcpctl verifies the admin API with, and whose user is the SRE's own certificate and key:
// no cluster credential is in it.
func TestBreakGlassOpenWritesAGatewayKubeconfig(t *testing.T) {
	const id = "0123456789abcdefghijklmnopqrstuv"
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/admin/v1/breakglass/c1" {
			http.NotFound(w, r)
			return
		}
		exp := time.Now().Add(time.Hour)
		_ = json.NewEncoder(w).Encode(adminapi.BreakGlassSession{ID: id, ClusterID: "c1", Person: "alice", Access: "read-only", Group: "openhcp:sre:read-only",
			State: adminapi.StateActive, ExpirationTime: &exp, GatewayURL: "https://127.0.0.1:8445/sessions/" + id})
	}))
	defer srv.Close()
	dir := t.TempDir()
	caFile, certFile, keyFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "alice.crt"), filepath.Join(dir, "alice.key")
	write := func(path string, typ string, der []byte) {
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(caFile, "CERTIFICATE", srv.Certificate().Raw)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "alice", Organization: []string{"sre-admin"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	write(certFile, "CERTIFICATE", der)
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	write(keyFile, "PRIVATE KEY", keyDER)

	kubeconfig := filepath.Join(dir, "c1.kubeconfig")
	args := []string{"--admin-url", srv.URL, "--ca", caFile, "--cert", certFile, "--key", keyFile,
		"breakglass", "open", "c1", "--reason", "INC-1", "--kubeconfig", kubeconfig}
	var out, errb bytes.Buffer
	if code := run(args, func(string) string { return "" }, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	fi, err := os.Stat(kubeconfig)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig %v, mode %v: want 0600", err, fi.Mode())
	}
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cur := cfg.Contexts[cfg.CurrentContext]
	cluster, user := cfg.Clusters[cur.Cluster], cfg.AuthInfos[cur.AuthInfo]
	caPEM, _ := os.ReadFile(caFile)
	if cluster.Server != "https://127.0.0.1:8445/sessions/"+id || !bytes.Equal(cluster.CertificateAuthorityData, caPEM) ||
		user.ClientCertificate != certFile || user.ClientKey != keyFile || len(user.ClientCertificateData) != 0 || len(user.ClientKeyData) != 0 || user.Token != "" {
		t.Fatalf("kubeconfig server %s, user %+v", cluster.Server, user)
	}
	if !strings.Contains(out.String(), "hcpctl breakglass close "+id) {
		t.Fatalf("output does not say how to close the session:\n%s", out.String())
	}
	// A second open never writes over the file.
	errb.Reset()
	if code := run(args, func(string) string { return "" }, &out, &errb); code != 2 || !strings.Contains(errb.String(), "exists") {
		t.Fatalf("second open over the same file: exit %d, %s", code, errb.String())
	}
}
