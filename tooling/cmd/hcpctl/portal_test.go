package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
)

// startPortal runs `hcpctl portal` on a free loopback port in front of upstream (a stand-in
// for the admin API that counts what reaches it) and returns the proxy's host:port.
func startPortal(t *testing.T, upstream *httptest.Server) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	a := &app{c: &adminapi.Client{BaseURL: upstream.URL, HTTP: upstream.Client()}, out: pw}
	done := make(chan error, 1)
	go func() { done <- portal(ctx, a, "127.0.0.1:0"); pw.Close() }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("hcpctl portal printed no address: %v", err)
	}
	go io.Copy(io.Discard, pr) //nolint:errcheck
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("hcpctl portal did not stop")
		}
	})
	// "portal: http://127.0.0.1:PORT/portal/ (...)"
	addr := strings.TrimPrefix(strings.Fields(line)[1], "http://")
	return strings.TrimSuffix(addr, "/portal/")
}

// TestPortalProxyRefusesForeignHosts plays DNS rebinding: a page of evil.example whose name
// now resolves to 127.0.0.1 reaches the proxy with its own name in Host. The proxy forwards
// only requests addressed to a loopback name at its own port; the rest get 403 and never reach
// the admin API. Every answer carries the security headers.
func TestPortalProxyRefusesForeignHosts(t *testing.T) {
	var reached atomic.Int64
	upstream := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.Write([]byte("portal page"))
	}))
	defer upstream.Close()
	addr := startPortal(t, upstream)
	_, port, _ := net.SplitHostPort(addr)
	for _, tc := range []struct {
		name, host string
		want       int
	}{
		{"ip_and_port_is_forwarded", "127.0.0.1:" + port, 200},
		{"localhost_and_port_is_forwarded", "localhost:" + port, 200},
		{"localhost_any_case_is_forwarded", "LocalHost:" + port, 200},
		{"rebound_name_is_refused", "evil.example:" + port, 403},
		{"rebound_name_without_port_is_refused", "evil.example", 403},
		{"localhost_subdomain_is_refused", "localhost.evil.example:" + port, 403},
		{"loopback_at_another_port_is_refused", "127.0.0.1:1", 403},
		{"no_port_is_refused", "127.0.0.1", 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := reached.Load()
			req, err := http.NewRequest("GET", "http://"+addr+"/portal/", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = tc.host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			forwarded := reached.Load() != before
			if resp.StatusCode != tc.want || forwarded != (tc.want == 200) {
				t.Fatalf("Host %q: %d (forwarded %v), want %d: %s", tc.host, resp.StatusCode, forwarded, tc.want, body)
			}
			for k, want := range map[string]string{"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"} {
				if got := resp.Header.Values(k); len(got) != 1 || got[0] != want {
					t.Errorf("%s: %q, want %q", k, got, want)
				}
			}
			if csp := resp.Header.Values("Content-Security-Policy"); len(csp) != 1 || !strings.Contains(csp[0], "frame-ancestors 'none'") {
				t.Errorf("Content-Security-Policy %q", csp)
			}
		})
	}
}
