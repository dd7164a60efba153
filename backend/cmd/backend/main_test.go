package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/pem"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// TestRunRefusesPlaintextOffLoopback: without a server certificate the backend's metrics stay on
// loopback, and it reaches a non-loopback Cluster Service only over TLS. Each refusal
// names its flag and happens before anything is dialled or opened.
func TestRunRefusesPlaintextOffLoopback(t *testing.T) {
	for _, tc := range []struct {
		name    string
		f       flags
		wantErr string
	}{
		{"metrics_off_loopback", flags{metricsListen: "0.0.0.0:8081", clusterService: "127.0.0.1:8090"}, "--metrics-listen"},
		{"plaintext_to_remote_cluster_service", flags{metricsListen: "127.0.0.1:0", clusterService: "cs.example.com:8090"}, "--cluster-service"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), tc.f, slog.New(slog.DiscardHandler))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("run = %v, want a refusal naming %s", err, tc.wantErr)
			}
		})
	}
}

// TestRunRefusesBadNotificationFlags: the notification policy's knobs stop start-up, naming the
// flag, when they cannot be read.
func TestRunRefusesBadNotificationFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		f       flags
		wantErr string
	}{
		{"allow_list_with_host_bits", flags{metricsListen: "127.0.0.1:0", clusterService: "127.0.0.1:8090", notifyAllowedCIDRs: "127.0.0.1/8"}, "--notification-allowed-cidrs"},
		{"allow_list_with_a_name", flags{metricsListen: "127.0.0.1:0", clusterService: "127.0.0.1:8090", notifyAllowedCIDRs: "localhost"}, "--notification-allowed-cidrs"},
		{"ca_missing", flags{metricsListen: "127.0.0.1:0", clusterService: "127.0.0.1:8090", notifyCA: "/nonexistent/ca.crt"}, "--notification-ca"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), tc.f, slog.New(slog.DiscardHandler))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("run = %v, want a refusal naming %s", err, tc.wantErr)
			}
		})
	}
}

// TestMetricsOffLoopbackServeTLS: with --tls-cert the metrics listener may bind every address (a
// pod's, for the kubelet's probes and Prometheus) and then speaks only TLS with that certificate.
func TestMetricsOffLoopbackServeTLS(t *testing.T) {
	p, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	files := p.MustFiles(pki.ClusterService) // any identity with a server certificate
	l, err := listenMetrics(flags{metricsListen: "0.0.0.0:0", metricsTLS: tlsconfig.Files{Cert: files.Cert, Key: files.Key}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	addr := net.JoinHostPort("127.0.0.1", func() string { _, port, _ := net.SplitHostPort(l.Addr().String()); return port }())

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
	if _, err := listenMetrics(flags{metricsListen: "0.0.0.0:0"}); err == nil || !strings.Contains(err.Error(), "--metrics-listen") {
		t.Fatalf("listenMetrics off loopback without --tls-cert = %v, want a refusal naming --metrics-listen", err)
	}
}
