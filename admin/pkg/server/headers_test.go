package server

import (
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestEveryAnswerForbidsFramingAndSniffing checks the security headers on the API's answers,
// the portal's pages and refusals, and /healthz, and that a portal page has no inline script
// or style attribute its policy would have to allow.
func TestEveryAnswerForbidsFramingAndSniffing(t *testing.T) {
	e := start(t)
	for _, tc := range []struct{ name, identity, method, path string }{
		{"api_json", "bob", "GET", "/admin/v1/shards"},
		{"api_refusal", "", "GET", "/admin/v1/shards"},
		{"api_not_found", "bob", "GET", "/admin/v1/nothing"},
		{"api_forged_post", "bob", "POST", "/admin/v1/shards/mgmt-1/cordon"},
		{"portal_page", "bob", "GET", "/portal/shards"},
		{"portal_fleet", "bob", "GET", "/portal/"},
		{"portal_refusal", "", "GET", "/portal/"},
		{"healthz", "", "GET", "/healthz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, e.url+tc.path, strings.NewReader(""))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := e.as(t, tc.identity).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			h := resp.Header
			for k, want := range map[string]string{"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"} {
				if got := h.Values(k); len(got) != 1 || got[0] != want {
					t.Errorf("%s: %q, want %q", k, got, want)
				}
			}
			csp := h.Get("Content-Security-Policy")
			if !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'none'") ||
				strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") || strings.Contains(csp, "script-src") {
				t.Errorf("Content-Security-Policy %q", csp)
			}
		})
	}
	t.Run("the_pages_stylesheet_is_the_one_the_policy_allows", func(t *testing.T) {
		req, _ := http.NewRequest("GET", e.url+"/portal/shards", nil)
		resp, err := e.as(t, "bob").Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		_, rest, ok1 := strings.Cut(string(body), "<style>")
		css, _, ok2 := strings.Cut(rest, "</style>")
		sum := sha256.Sum256([]byte(css))
		if want := "style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !ok1 || !ok2 || !strings.Contains(resp.Header.Get("Content-Security-Policy"), want) {
			t.Fatalf("the page's <style> hashes to %s, not in %q", want, resp.Header.Get("Content-Security-Policy"))
		}
	})
	t.Run("portal_pages_need_no_inline_script_or_style_attribute", func(t *testing.T) {
		for _, path := range []string{"/portal/", "/portal/shards", "/portal/audit", "/portal/breakglass"} {
			code, _, body := e.call(t, "alice", "GET", path, "")
			if code != 200 || strings.Contains(string(body), "<script") || strings.Contains(string(body), " style=") || strings.Contains(string(body), "onclick=") {
				t.Errorf("%s: %d %.300s", path, code, body)
			}
		}
	})
}
