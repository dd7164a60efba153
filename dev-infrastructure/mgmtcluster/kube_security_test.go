package mgmtcluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestManagementClusterStorageIsLockedDown starts a management cluster and checks what an
// attacker on the host would try first: etcd speaks only TLS and only to the kube-apiserver's
// client certificate of the etcd CA; Secrets are encrypted before they reach etcd; and the
// processes' logs are not world-readable.
func TestManagementClusterStorageIsLockedDown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real etcd and kube-apiserver")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	apiserver, etcd, err := KubeBinaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	state, logs := filepath.Join(dir, "state"), filepath.Join(dir, "logs")
	mc, err := StartManagementCluster(ctx, ManagementClusterOptions{
		Name: "locked", Dir: state, LogDir: logs, APIServerPath: apiserver, EtcdPath: etcd, SkipCRDs: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Stop()

	// etcd's client endpoint, from its command line (a unixs:// URL).
	var etcdEndpoint string
	for _, a := range mc.Etcd.Spec.Args {
		if v, ok := strings.CutPrefix(a, "--listen-client-urls="); ok {
			etcdEndpoint = v
		}
	}
	if etcdEndpoint == "" {
		t.Fatalf("no --listen-client-urls in %v", mc.Etcd.Spec.Args)
	}
	pkiDir := filepath.Join(state, "pki")
	readFile := func(t *testing.T, name string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(pkiDir, name))
		if err != nil {
			t.Fatalf("read %s: %v", name, err)
		}
		return b
	}
	etcdClient := func(t *testing.T, certFile, keyFile string) *http.Client {
		t.Helper()
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(readFile(t, "etcd-ca.crt")) {
			t.Fatal("etcd-ca.crt does not parse")
		}
		cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		if certFile != "" {
			cert, err := tls.X509KeyPair(readFile(t, certFile), readFile(t, keyFile))
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		c, err := EtcdHTTPClient(etcdEndpoint, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	get := func(c *http.Client, url string) (int, error) {
		resp, err := c.Get(url)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}

	t.Run("etcd_refuses_plaintext", func(t *testing.T) {
		if status, err := get(plaintextEtcdClient(t, etcdEndpoint), "http://localhost/health"); err == nil {
			t.Fatalf("plaintext GET /health served (%d)", status)
		}
	})
	t.Run("etcd_refuses_tls_without_a_client_certificate", func(t *testing.T) {
		if status, err := get(etcdClient(t, "", ""), "https://localhost/health"); err == nil {
			t.Fatalf("GET /health without a client certificate served (%d)", status)
		}
	})
	t.Run("etcd_refuses_a_certificate_of_another_CA", func(t *testing.T) {
		// The cluster admin's certificate: valid for the apiserver, not for etcd.
		if status, err := get(etcdClient(t, "admin.crt", "admin.key"), "https://localhost/health"); err == nil {
			t.Fatalf("GET /health with the apiserver CA's admin certificate served (%d)", status)
		}
	})
	t.Run("etcd_serves_the_apiserver_client_certificate", func(t *testing.T) {
		status, err := get(etcdClient(t, "apiserver-etcd-client.crt", "apiserver-etcd-client.key"), "https://localhost/health")
		if err != nil || status != http.StatusOK {
			t.Fatalf("GET /health as the apiserver: %d %v", status, err)
		}
	})

	t.Run("etcd_has_no_tcp_listener", func(t *testing.T) { checkEtcdHasNoTCPListener(t, mc.Etcd) })
	t.Run("etcd_refuses_another_user", func(t *testing.T) { checkEtcdRefusesAnotherUser(t, mc.Etcd) })

	t.Run("secrets_are_encrypted_in_etcd", func(t *testing.T) {
		kube, err := kubernetes.NewForConfig(mc.RESTConfig())
		if err != nil {
			t.Fatal(err)
		}
		canary := fmt.Sprintf("canary-%d-plaintext", time.Now().UnixNano())
		_, err = kube.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "at-rest"}, StringData: map[string]string{"password": canary},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create Secret through the apiserver: %v", err)
		}
		got, err := kube.CoreV1().Secrets("default").Get(ctx, "at-rest", metav1.GetOptions{})
		if err != nil || string(got.Data["password"]) != canary {
			t.Fatalf("read the Secret back through the apiserver: %v %q", err, got.Data["password"])
		}
		// etcd's v3 JSON gateway: POST /v3/kv/range with the key in base64.
		body, _ := json.Marshal(map[string]string{"key": base64.StdEncoding.EncodeToString([]byte("/registry/secrets/default/at-rest"))})
		resp, err := etcdClient(t, "apiserver-etcd-client.crt", "apiserver-etcd-client.key").Post("https://localhost/v3/kv/range", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("read the raw key from etcd: %v", err)
		}
		defer resp.Body.Close()
		var out struct {
			KVs []struct {
				Value string `json:"value"`
			} `json:"kvs"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.KVs) != 1 {
			t.Fatalf("raw read: status %d, %v, %d keys", resp.StatusCode, err, len(out.KVs))
		}
		raw, err := base64.StdEncoding.DecodeString(out.KVs[0].Value)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(raw, []byte("k8s:enc:")) {
			t.Errorf("the stored Secret does not start with k8s:enc: (%q…)", raw[:min(len(raw), 24)])
		}
		if bytes.Contains(raw, []byte(canary)) {
			t.Errorf("the stored Secret holds its value in clear")
		}
	})

	t.Run("encryption_key_file_is_private", func(t *testing.T) {
		st, err := os.Stat(filepath.Join(state, "encryption-config.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("encryption-config.yaml mode %o, want 600", st.Mode().Perm())
		}
	})

	t.Run("logs_are_not_world_readable", func(t *testing.T) {
		st, err := os.Stat(logs)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o750 {
			t.Errorf("log directory mode %o, want 750", st.Mode().Perm())
		}
		for _, p := range []*Process{mc.Etcd, mc.APIServer} {
			st, err := os.Stat(p.LogPath)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != 0o640 {
				t.Errorf("%s mode %o, want 640", filepath.Base(p.LogPath), st.Mode().Perm())
			}
		}
	})
}
