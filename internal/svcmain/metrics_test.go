package svcmain

import (
	"bytes"
	"crypto/tls"
	"encoding/pem"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/serverlimits"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// TestMetricsOnLoopbackServesHealthAndMetrics: plaintext on loopback, /healthz answers ok and
// /metrics the registry's metrics; after Close nothing answers.
func TestMetricsOnLoopbackServesHealthAndMetrics(t *testing.T) {
	m, err := ListenMetrics("127.0.0.1:0", tlsconfig.Files{})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "svcmain_test_total", Help: "a test counter"})
	reg.MustRegister(c)
	c.Add(3)
	m.Serve(reg, slog.New(slog.DiscardHandler))
	client := &http.Client{Timeout: 10 * time.Second}
	base := "http://" + m.Addr().String()
	for path, want := range map[string]string{"/healthz": "ok", "/metrics": "svcmain_test_total 3"} {
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), want) {
			t.Fatalf("GET %s = %d %q, want 200 with %q", path, resp.StatusCode, b, want)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if resp, err := client.Get(base + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatal("/healthz answered after Close")
	}
}

// TestMetricsOffLoopbackServeTLS: with --tls-cert the metrics listener may bind every address (a
// pod's, for the kubelet's probes and Prometheus) and then speaks only TLS with that
// certificate; without it, it refuses to start, naming --metrics-listen.
func TestMetricsOffLoopbackServeTLS(t *testing.T) {
	p, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	files := p.MustFiles(pki.ClusterService) // any identity with a server certificate
	m, err := ListenMetrics("0.0.0.0:0", tlsconfig.Files{Cert: files.Cert, Key: files.Key})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.Serve(prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	_, port, _ := net.SplitHostPort(m.Addr().String())
	addr := net.JoinHostPort("127.0.0.1", port)

	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("TLS handshake with the metrics listener: %v", err)
	}
	peer := conn.ConnectionState().PeerCertificates[0].Raw
	conn.Close()
	raw, err := os.ReadFile(files.Cert)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(raw)
	if block == nil || !bytes.Equal(block.Bytes, peer) {
		t.Fatal("the metrics listener did not present --tls-cert")
	}
	if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plaintext request to the TLS metrics listener succeeded")
		}
	}
	if _, err := ListenMetrics("0.0.0.0:0", tlsconfig.Files{}); err == nil || !strings.Contains(err.Error(), "--metrics-listen") {
		t.Fatalf("ListenMetrics off loopback without --tls-cert = %v, want a refusal naming --metrics-listen", err)
	}
}

// TestHealthAnsweredWhileTricklesHoldEveryConnection: a local process holding all of a metrics
// listener's connections with half-sent requests does not keep /healthz from answering within a
// probe's patience, half the header timeout (the kubelet's default probe timeout is 1 s). The
// trickles were closed only by the header timeout before, and a probe waited for it.
func TestHealthAnsweredWhileTricklesHoldEveryConnection(t *testing.T) {
	m, err := ListenMetrics("127.0.0.1:0", tlsconfig.Files{})
	if err != nil {
		t.Fatal(err)
	}
	m.Serve(prometheus.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(func() { m.Close() })
	limits := serverlimits.Metrics()
	for range limits.MaxConns {
		c, err := net.Dial("tcp", m.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	client := &http.Client{Timeout: limits.ReadHeaderTimeout / 2}
	resp, err := client.Get("http://" + m.Addr().String() + "/healthz")
	if err != nil {
		t.Fatalf("/healthz with %d trickling connections held: %v", limits.MaxConns, err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK || string(b) != "ok" {
		t.Fatalf("/healthz: %s %q", resp.Status, b)
	}
}
