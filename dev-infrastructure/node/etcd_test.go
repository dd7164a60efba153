package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startTestEtcd starts only the node's etcd, exactly as Start does, in a namespace of its own.
func startTestEtcd(t *testing.T, ctx context.Context) (*Node, string) {
	t.Helper()
	requireNetns(t)
	bin, err := toolBinary(ctx, "etcd", kubeModule, "./cmd/etcd", "")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "ohcp-etcd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	for _, d := range []string{"logs", "etcd"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	ns, err := CreateNetns(ctx, "openhcp-etcdtest-", DefaultNodeIP)
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{Netns: ns, Dir: dir, log: slog.New(slog.DiscardHandler)}
	t.Cleanup(func() {
		for _, p := range n.procs {
			p.stop()
		}
		_ = ns.Delete(context.Background())
	})
	pkiDir := filepath.Join(dir, "pki")
	if err := writePKI(pkiDir, DefaultNodeIP, kubernetesService); err != nil {
		t.Fatal(err)
	}
	if _, err := n.startEtcd(ctx, bin, pkiDir); err != nil {
		t.Fatal(err)
	}
	return n, pkiDir
}

// etcdTLS is a TLS config trusting the node's etcd CA and presenting the named client
// certificate of pkiDir ("" for none).
func etcdTLS(t *testing.T, pkiDir, client string) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	if ca, err := os.ReadFile(filepath.Join(pkiDir, "etcd-ca.crt")); err == nil {
		pool.AppendCertsFromPEM(ca)
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if client != "" {
		cert, err := tls.LoadX509KeyPair(filepath.Join(pkiDir, client+".crt"), filepath.Join(pkiDir, client+".key"))
		if err != nil {
			// Reported, not fatal: the caller's subtest fails, the others still run.
			t.Errorf("client certificate %s: %v", client, err)
			return cfg
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg
}

func TestNodeEtcdAdmitsOnlyTheAPIServersClientCertificate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	n, pkiDir := startTestEtcd(t, ctx)
	get := func(scheme, addr, path string, cfg *tls.Config) (int, string, error) {
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: n.Netns.DialContext, TLSClientConfig: cfg}}
		resp, err := c.Get(fmt.Sprintf("%s://%s%s", scheme, addr, path))
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	ports := []struct{ name, addr, path string }{
		{"client", "127.0.0.1:2379", "/health"},
		{"peer", "127.0.0.1:2380", "/members"},
		{"metrics", "127.0.0.1:2381", "/metrics"},
	}
	// Wait until every port accepts connections and etcd reports itself healthy (to the one
	// caller it must admit), so a refusal below is etcd's, not a port not yet open.
	if err := n.waitFor(ctx, "etcd", 90*time.Second, func() error {
		for _, p := range ports {
			c, err := n.Netns.DialContext(ctx, "tcp", p.addr)
			if err != nil {
				return err
			}
			c.Close()
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	admitted := etcdTLS(t, pkiDir, "apiserver-etcd-client")
	for _, p := range ports {
		t.Run("the_apiservers_etcd_client_certificate_is_admitted/"+p.name, func(t *testing.T) {
			err := n.waitFor(ctx, "etcd "+p.name, 60*time.Second, func() error {
				code, body, err := get("https", p.addr, p.path, admitted)
				if err != nil || code != http.StatusOK || (p.name == "client" && !strings.Contains(body, `"health":"true"`)) {
					return fmt.Errorf("https %s%s with the apiserver's etcd client certificate: %d %.80q %v", p.addr, p.path, code, body, err)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
	tests := []struct {
		name   string
		scheme string
		cfg    *tls.Config
	}{
		{"anonymous_plaintext_is_refused", "http", nil},
		{"tls_without_a_client_certificate_is_refused", "https", etcdTLS(t, pkiDir, "")},
		// The admin's certificate is of the node's Kubernetes CA, not etcd's: etcd has no
		// authorization of its own, so no other certificate of the node may open it.
		{"a_client_certificate_of_the_kubernetes_ca_is_refused", "https", etcdTLS(t, pkiDir, "admin")},
	}
	for _, tt := range tests {
		for _, p := range ports {
			t.Run(tt.name+"/"+p.name, func(t *testing.T) {
				code, body, err := get(tt.scheme, p.addr, p.path, tt.cfg)
				if err == nil && code == http.StatusOK {
					t.Fatalf("%s %s%s answered 200 (%.80q), want a refused handshake or an error status", tt.scheme, p.addr, p.path, body)
				}
			})
		}
	}
}
