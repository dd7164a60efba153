package monitor

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// TestNewReadyzProbe: the probe --shard-probe builds verifies the server against the given CA
// and the URL's host, and wants 200.
func TestNewReadyzProbe(t *testing.T) {
	var ready atomic.Bool
	ready.Store(true)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := NewReadyzProbe(srv.URL+"/readyz", tlsconfig.Files{CA: ca})
	if err != nil {
		t.Fatal(err)
	}
	if err := p(context.Background()); err != nil {
		t.Fatalf("probe of a ready server: %v", err)
	}
	ready.Store(false)
	if err := p(context.Background()); err == nil {
		t.Fatal("probe of a server answering 503 passed")
	}
	for _, bad := range []string{"http://127.0.0.1:1/readyz", "127.0.0.1:1", "https:///readyz"} {
		if _, err := NewReadyzProbe(bad, tlsconfig.Files{CA: ca}); err == nil {
			t.Errorf("NewReadyzProbe(%q) accepted it", bad)
		}
	}
}

// TestHostedAPIServerProbe: the hosted kube-apiserver counts as answering when it completes a
// TLS handshake and answers /readyz as a kube-apiserver does to a caller without a credential
// (401 with --anonymous-auth=false, 403 or 200 with it); no answer, or a 5xx, is a failure. No
// client certificate is ever sent.
func TestHostedAPIServerProbe(t *testing.T) {
	var code atomic.Int32
	var sawCert atomic.Bool
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			sawCert.Store(true)
		}
		if r.URL.Path != "/readyz" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.WriteHeader(int(code.Load()))
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	probe := NewHostedAPIServerProbe()
	for _, tc := range []struct {
		name string
		code int
		ok   bool
	}{
		{"401_to_a_caller_without_credentials_is_alive", http.StatusUnauthorized, true},
		{"403_is_alive", http.StatusForbidden, true},
		{"200_is_alive", http.StatusOK, true},
		{"503_is_a_failure", http.StatusServiceUnavailable, false},
		{"500_is_a_failure", http.StatusInternalServerError, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code.Store(int32(tc.code))
			err := probe(context.Background(), srv.URL)
			if (err == nil) != tc.ok {
				t.Fatalf("probe of a server answering %d: %v, want ok=%v", tc.code, err, tc.ok)
			}
		})
	}
	if sawCert.Load() {
		t.Fatal("the probe sent a client certificate")
	}
	t.Run("a_closed_port_is_a_failure", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		_ = l.Close()
		if err := probe(context.Background(), "https://"+addr); err == nil {
			t.Fatal("probe of a closed port passed")
		}
	})
	t.Run("a_plain_http_server_is_a_failure", func(t *testing.T) {
		plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) }))
		t.Cleanup(plain.Close)
		if err := probe(context.Background(), "https://"+strings.TrimPrefix(plain.URL, "http://")); err == nil {
			t.Fatal("probe of a server without TLS passed")
		}
	})
	t.Run("an_api_url_that_is_not_https_is_refused", func(t *testing.T) {
		if err := probe(context.Background(), "http://127.0.0.1:1"); err == nil {
			t.Fatal("probe accepted an http:// api_url")
		}
	})
}

// TestHostedAPIServerProbeDoesNotFollowRedirects: a server at a cluster's api_url that
// redirects is not a kube-apiserver answering. The probe neither follows it (the Monitor must
// not be steered to request any address a hosted endpoint names) nor counts it as alive.
func TestHostedAPIServerProbeDoesNotFollowRedirects(t *testing.T) {
	var followed atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		followed.Add(1)
	}))
	t.Cleanup(target.Close)
	redirector := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/elsewhere", http.StatusFound)
	}))
	t.Cleanup(redirector.Close)
	if err := NewHostedAPIServerProbe()(context.Background(), redirector.URL); err == nil {
		t.Error("a redirecting api_url counted as a kube-apiserver answering")
	}
	if n := followed.Load(); n != 0 {
		t.Errorf("the probe followed the redirect: %d requests reached its target, want 0", n)
	}
}
