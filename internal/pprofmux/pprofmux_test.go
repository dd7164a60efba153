package pprofmux

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func tokenFile(t *testing.T) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "pprof-token")
	if err := WriteTokenFile(f); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(f); st.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v, want 0600", st.Mode().Perm())
	}
	return f
}

func TestRegister(t *testing.T) {
	tok := tokenFile(t)
	mux := http.NewServeMux()
	Register(mux, tok)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := Client(tok, 30*time.Second)
	for _, tc := range []struct {
		path, want string
	}{
		{"/debug/pprof/", "goroutine"},
		{"/debug/pprof/heap?debug=1", "heap profile"},
		{"/debug/pprof/goroutine?debug=1", "goroutine profile"},
		{"/debug/pprof/cmdline", ""},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp, err := c.Get(srv.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), tc.want) {
				t.Fatalf("GET %s: %d, body %.200q; want 200 containing %q", tc.path, resp.StatusCode, body, tc.want)
			}
		})
	}
}

// TestProfilesOnlyOnLoopback: a connection that reached the metrics listener at a
// non-loopback address (a pod's IP, a node's) gets no profile, whatever it presents; one
// that reached it at a loopback address (the local region, kubectl port-forward) does.
// TestProfilesNeedTheToken: without the token file's token (none, a wrong one, another
// scheme) a profile is 401, with it 200; without a token file no profile route exists.
func TestProfilesNeedTheToken(t *testing.T) {
	tok := tokenFile(t)
	mux := http.NewServeMux()
	Register(mux, tok)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	right, _ := os.ReadFile(tok)
	for _, tc := range []struct {
		name, header string
		want         int
	}{
		{"no_token_is_401", "", http.StatusUnauthorized},
		{"wrong_token_is_401", "Bearer " + strings.Repeat("0", 64), http.StatusUnauthorized},
		{"token_without_bearer_is_401", strings.TrimSpace(string(right)), http.StatusUnauthorized},
		{"right_token_is_served", "Bearer " + strings.TrimSpace(string(right)), http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/debug/pprof/cmdline", nil)
			if tc.header != "" {
				req.Header.Set(TokenHeader, tc.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("%d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
	t.Run("no_token_file_serves_no_profile", func(t *testing.T) {
		mux := http.NewServeMux()
		Register(mux, "")
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/debug/pprof/cmdline", nil))
		if w.Code != http.StatusNotFound {
			t.Fatalf("%d, want 404", w.Code)
		}
	})
}

func TestProfilesOnlyOnLoopback(t *testing.T) {
	tok := tokenFile(t)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("metrics")) })
	Register(mux, tok)
	for _, tc := range []struct {
		name, path string
		local      net.Addr
		want       int
	}{
		{"index_at_a_pod_ip_is_403", "/debug/pprof/", &net.TCPAddr{IP: net.ParseIP("10.128.0.7"), Port: 8091}, http.StatusForbidden},
		{"heap_at_a_pod_ip_is_403", "/debug/pprof/heap", &net.TCPAddr{IP: net.ParseIP("10.128.0.7"), Port: 8091}, http.StatusForbidden},
		{"cpu_at_an_ipv6_address_is_403", "/debug/pprof/profile?seconds=1", &net.TCPAddr{IP: net.ParseIP("fd00::7"), Port: 8091}, http.StatusForbidden},
		{"cmdline_without_a_known_address_is_403", "/debug/pprof/cmdline", nil, http.StatusForbidden},
		{"cmdline_on_loopback_is_served", "/debug/pprof/cmdline", &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 8091}, http.StatusOK},
		{"cmdline_on_ipv6_loopback_is_served", "/debug/pprof/cmdline", &net.TCPAddr{IP: net.ParseIP("::1"), Port: 8091}, http.StatusOK},
		{"metrics_at_a_pod_ip_is_not_affected", "/metrics", &net.TCPAddr{IP: net.ParseIP("10.128.0.7"), Port: 8091}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, tc.path, nil)
			if err := Authorize(r, tok); err != nil {
				t.Fatal(err)
			}
			if tc.local != nil {
				r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, tc.local))
			}
			w := httptest.NewRecorder()
			mux.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("%d, want %d: %.200s", w.Code, tc.want, w.Body.String())
			}
		})
	}
}
