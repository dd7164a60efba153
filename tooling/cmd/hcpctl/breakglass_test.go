package main

import (
	"bytes"
	"encoding/json"
	"net/http"
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
	api, caFile, certFile, keyFile := adminAPI(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/admin/v1/breakglass/c1" {
			http.NotFound(w, r)
			return
		}
		exp := time.Now().Add(time.Hour)
		_ = json.NewEncoder(w).Encode(adminapi.BreakGlassSession{ID: id, ClusterID: "c1", Person: "alice", Access: "read-only", Group: "openhcp:sre:read-only",
			State: adminapi.StateActive, ExpirationTime: &exp, GatewayURL: "https://127.0.0.1:8445/sessions/" + id})
	}))
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "c1.kubeconfig")
	args := append(api, "breakglass", "open", "c1", "--reason", "INC-1", "--kubeconfig", kubeconfig)
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
