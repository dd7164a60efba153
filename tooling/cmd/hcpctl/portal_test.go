package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
)

// startPortal runs `hcpctl portal` on a free loopback port in front of upstream (a stand-in
// for the admin API that counts what reaches it) and returns the proxy's host:port and the key
// its printed address holds.
func startPortal(t *testing.T, upstream *httptest.Server) (addr, key string) {
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
	// "portal: http://127.0.0.1:PORT/portal/?hcpctl-portal-key=KEY (...)"
	printed, err := url.Parse(strings.Fields(line)[1])
	if err != nil {
		t.Fatalf("hcpctl portal printed %q: %v", line, err)
	}
	return printed.Host, printed.Query().Get(portalTokenParam)
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
	addr, key := startPortal(t, upstream)
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
			req.AddCookie(&http.Cookie{Name: portalCookie(port), Value: key})
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

// TestPortalProxyAdmitsOnlyTheBrowserThatOpenedItsAddress: the proxy acts with the SRE's
// certificate, and any process of the machine can reach its loopback port (a probe, as another
// local user, listed every cluster and opened a break-glass session through it). It forwards only
// a request that holds the key of its printed address: the address itself, answered by a cookie
// and a redirect that drops the key, then the cookie. Everything else is 401 and never reaches
// the admin API, which never sees the proxy's cookie either.
func TestPortalProxyAdmitsOnlyTheBrowserThatOpenedItsAddress(t *testing.T) {
	var reached atomic.Int64
	var upstreamCookies atomic.Value
	upstream := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		upstreamCookies.Store(r.Header.Get("Cookie"))
		w.Write([]byte("portal page"))
	}))
	defer upstream.Close()
	addr, key := startPortal(t, upstream)
	if len(key) < 40 {
		t.Fatalf("the printed address holds the key %q, want 32 random bytes", key)
	}
	_, port, _ := net.SplitHostPort(addr)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path string, cookies ...*http.Cookie) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cookies {
			req.AddCookie(c)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	wrong := strings.Repeat("A", len(key))
	for _, tc := range []struct {
		name    string
		method  string
		path    string
		cookies []*http.Cookie
	}{
		{"no_key", "GET", "/portal/", nil},
		{"api_without_a_key", "GET", "/admin/v1/clusters", nil},
		{"a_wrong_key_in_the_address", "GET", "/portal/?" + portalTokenParam + "=" + wrong, nil},
		{"a_wrong_key_in_the_cookie", "GET", "/portal/", []*http.Cookie{{Name: portalCookie(port), Value: wrong}}},
		{"the_key_in_another_ports_cookie", "GET", "/portal/", []*http.Cookie{{Name: portalCookie("1"), Value: key}}},
		{"a_post_with_the_key_in_the_address", "POST", "/portal/shards/x/cordon?" + portalTokenParam + "=" + key, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := reached.Load()
			if resp := do(tc.method, tc.path, tc.cookies...); resp.StatusCode != http.StatusUnauthorized || reached.Load() != before {
				t.Fatalf("%s %s: %d (forwarded %v), want 401, not forwarded", tc.method, tc.path, resp.StatusCode, reached.Load() != before)
			}
		})
	}

	// The printed address: a cookie, and the same address without the key.
	before := reached.Load()
	resp := do("GET", "/portal/clusters?state=ready&"+portalTokenParam+"="+key)
	if resp.StatusCode != http.StatusSeeOther || reached.Load() != before {
		t.Fatalf("the printed address: %d (forwarded %v), want 303, not forwarded", resp.StatusCode, reached.Load() != before)
	}
	if loc := resp.Header.Get("Location"); loc != "/portal/clusters?state=ready" {
		t.Errorf("sent on to %q, want the same address without the key", loc)
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == portalCookie(port) {
			cookie = c
		}
	}
	if cookie == nil || cookie.Value != key || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("the cookie set: %+v, want the key, HttpOnly, SameSite=Strict", cookie)
	}
	// With the cookie (and another of the page's own), every request is forwarded, without the
	// proxy's cookie.
	for _, path := range []string{"/portal/", "/admin/v1/clusters"} {
		if resp := do("GET", path, cookie, &http.Cookie{Name: "page", Value: "kept"}); resp.StatusCode != 200 {
			t.Fatalf("GET %s with the cookie: %d, want 200", path, resp.StatusCode)
		}
		if got, _ := upstreamCookies.Load().(string); got != "page=kept" {
			t.Errorf("the admin API got the cookies %q, want only the page's own", got)
		}
	}
}
