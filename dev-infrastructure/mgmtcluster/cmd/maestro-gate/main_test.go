package main

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/serverlimits"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// chartAllow is the --allow the maestro server chart renders for the dev region.
const chartAllow = "spiffe://cluster.local/ns/openhcp-admin/sa/admin=read-only,spiffe://cluster.local/ns/openhcp-cluster-service/sa/cluster-service=read-write"

// TestParse: the chart's arguments are accepted, and a gate that would be open, or would proxy
// off the pod's loopback, does not start.
func TestParse(t *testing.T) {
	chart := []string{"--listen=:8000", "--tls-cert=/t/tls.crt", "--tls-key=/t/tls.key", "--client-ca=/t/ca.crt",
		"--upstream=https://127.0.0.1:18000", "--upstream-ca=/t/ca.crt", "--allow=" + chartAllow,
		"--client-cert-forward=:8090=127.0.0.1:18090", "--forward=:8083=127.0.0.1:18083", "--metrics=:8080=127.0.0.1:18080"}
	with := func(flag, value string) []string {
		var out []string
		for _, a := range chart {
			if !strings.HasPrefix(a, flag+"=") {
				out = append(out, a)
			}
		}
		if value != "" {
			out = append(out, flag+"="+value)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"chart_arguments_accepted", chart, ""},
		{"no_allow_list_refused", with("--allow", ""), "--allow"},
		{"a_common_name_allow_list_refused", with("--allow", "admin=read-only,cluster-service=read-write"), "--allow"},
		{"no_client_ca_refused", with("--client-ca", ""), "--client-ca"},
		{"plaintext_upstream_refused", with("--upstream", "http://127.0.0.1:18000"), "--upstream"},
		{"upstream_off_loopback_refused", with("--upstream", "https://10.0.0.1:18000"), "--upstream"},
		{"forward_off_loopback_refused", with("--forward", ":8083=10.0.0.1:18083"), "--forward"},
		{"client_cert_forward_off_loopback_refused", with("--client-cert-forward", ":8090=10.0.0.1:18090"), "--client-cert-forward"},
		{"a_port_forwarded_twice_refused", with("--forward", ":8090=127.0.0.1:18083"), "forwarded twice"},
		{"metrics_off_loopback_refused", with("--metrics", ":8080=10.0.0.1:18080"), "--metrics"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse(tc.args)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("parse: %v", err)
				}
				if len(c.forwards) != 2 || c.metricsListen != ":8080" || c.metricsTarget != "127.0.0.1:18080" || c.rules.String() != chartAllow {
					t.Fatalf("parsed %+v", c)
				}
				// gRPC (Maestro's mutual TLS) keeps only proven connections at its cap; health
				// (plaintext) keeps the silent rule.
				if g, h := c.forwards[":8090"], c.forwards[":8083"]; g.target != "127.0.0.1:18090" || g.limits().Proof == nil ||
					h.target != "127.0.0.1:18083" || h.limits().Proof != nil {
					t.Fatalf("forwards %+v: want gRPC with a proof, health without", c.forwards)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("parse = %v, want an error naming %s", err, tc.wantErr)
			}
		})
	}
}

// TestMetricsAreServedOverTLSAndNothingElse: Maestro's plaintext metrics (on the pod's
// loopback) reach a scraper off loopback only over TLS with the gate's certificate, and only
// GET /metrics: never in plaintext, never another path of Maestro's metrics server.
func TestMetricsAreServedOverTLSAndNothingElse(t *testing.T) {
	maestro := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "maestro "+r.URL.Path)
	}))
	defer maestro.Close()
	p, err := pki.Create(filepath.Join(t.TempDir(), "pki"), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	server := p.MustFiles(pki.MaestroServer)
	// A pod's address, as the chart's :8080: not loopback, so TLS is required.
	cfg, err := tlsconfig.Files{Cert: server.Cert, Key: server.Key}.Metrics("10.0.0.1:8080")
	if err != nil || cfg == nil {
		t.Fatalf("metrics TLS off loopback: %v, %v", cfg, err)
	}
	srv := metricsServer(strings.TrimPrefix(maestro.URL, "http://"), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv.Addr = "127.0.0.1:0"
	l, err := serverlimits.Metrics().Listen(srv)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()

	ca, err := os.ReadFile(p.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	scraper := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: roots, ServerName: pki.ServerName(pki.MaestroServer), MinVersion: tls.VersionTLS12}}}
	get := func(c *http.Client, u string) (int, string) {
		resp, err := c.Get(u)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	addr := l.Addr().String()
	if code, body := get(scraper, "https://"+addr+"/metrics"); code != http.StatusOK || body != "maestro /metrics" {
		t.Errorf("GET /metrics over TLS without a client certificate: %d %q, want Maestro's metrics", code, body)
	}
	if code, body := get(scraper, "https://"+addr+"/debug/pprof/"); code == http.StatusOK {
		t.Errorf("GET /debug/pprof/ over TLS: %d %q, want refused", code, body)
	}
	if code, body := get(&http.Client{Timeout: 30 * time.Second}, "http://"+addr+"/metrics"); code == http.StatusOK {
		t.Errorf("GET /metrics in plaintext: %d %q, want refused", code, body)
	}
}

// TestMetricsServerBoundsSlowCallers: the metrics listener cuts a caller that trickles its
// request or sits idle, as every metrics listener of the region (serverlimits.Metrics).
func TestMetricsServerBoundsSlowCallers(t *testing.T) {
	srv := metricsServer("127.0.0.1:1", nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	checkLimits(t, "metrics", srv, serverlimits.Metrics())
}

func checkLimits(t *testing.T, name string, srv *http.Server, want serverlimits.HTTP) {
	t.Helper()
	for _, d := range want.Unlike(srv) {
		t.Errorf("%s server %s", name, d)
	}
}
