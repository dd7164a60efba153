package egress

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestCheckAddr(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		allowed []string
		refused bool
	}{
		{addr: "127.0.0.1", refused: true},
		{addr: "127.1.2.3", refused: true},
		{addr: "::1", refused: true},
		{addr: "10.0.0.1", refused: true},
		{addr: "172.16.5.4", refused: true},
		{addr: "192.168.1.1", refused: true},
		{addr: "169.254.169.254", refused: true},
		{addr: "fe80::1", refused: true},
		{addr: "fc00::1", refused: true},
		{addr: "fd12:3456::1", refused: true},
		{addr: "100.64.0.1", refused: true},
		{addr: "100.127.255.254", refused: true},
		{addr: "0.0.0.0", refused: true},
		{addr: "::", refused: true},
		{addr: "224.0.0.1", refused: true},
		{addr: "ff02::1", refused: true},
		{addr: "255.255.255.255", refused: true},
		{addr: "::ffff:127.0.0.1", refused: true},
		{addr: "::ffff:10.0.0.1", refused: true},
		{addr: "::ffff:169.254.169.254", refused: true},
		{addr: "::ffff:100.64.0.1", refused: true},
		{addr: "64:ff9b::a9fe:a9fe", refused: true}, // NAT64 form of 169.254.169.254
		{addr: "2002:7f00:1::1", refused: true},     // 6to4 form of 127.0.0.1
		{addr: "20.50.2.1"},
		{addr: "100.63.255.255"},
		{addr: "100.128.0.0"},
		{addr: "2603:1030::1"},
		{addr: "::ffff:20.50.2.1"},
		{addr: "127.0.0.1", allowed: []string{"127.0.0.1/32"}},
		{addr: "::ffff:127.0.0.1", allowed: []string{"127.0.0.1/32"}},
		{addr: "127.0.0.2", allowed: []string{"127.0.0.1/32"}, refused: true},
		{addr: "169.254.169.254", allowed: []string{"127.0.0.0/8"}, refused: true},
	} {
		name := tc.addr
		if len(tc.allowed) > 0 {
			name += "_allowing_" + strings.Join(tc.allowed, ",")
		}
		t.Run(name, func(t *testing.T) {
			var p Policy
			for _, a := range tc.allowed {
				p.AllowedCIDRs = append(p.AllowedCIDRs, netip.MustParsePrefix(a))
			}
			err := p.CheckAddr(netip.MustParseAddr(tc.addr))
			if tc.refused != (err != nil) || err != nil && !errors.Is(err, ErrRefused) {
				t.Fatalf("CheckAddr(%s) = %v, want refused %v", tc.addr, err, tc.refused)
			}
			// The dial-time hook applies the same rule to the resolved address and port, before
			// any packet is sent.
			err = p.control("tcp", netip.AddrPortFrom(netip.MustParseAddr(tc.addr), 443).String(), nil)
			if tc.refused != (err != nil) {
				t.Fatalf("dial hook for %s = %v, want refused %v", tc.addr, err, tc.refused)
			}
		})
	}
}

func TestCheckURL(t *testing.T) {
	for _, tc := range []struct{ uri, wantErr string }{
		{"https://management.azure.com/notify?x=1", ""},
		{"HTTPS://management.azure.com/notify", ""},
		{"http://management.azure.com/notify", "not https"},
		{"ftp://management.azure.com/", "not https"},
		{"//management.azure.com/notify", "not https"},
		{"https:///notify", "no host"},
		{"https://user:pass@management.azure.com/", "credentials"},
		{"https://exa mple.com/", "parse"},
	} {
		t.Run(tc.uri, func(t *testing.T) {
			_, err := CheckURL(tc.uri)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrRefused)) {
				t.Fatalf("CheckURL(%q) = %v, want %q", tc.uri, err, tc.wantErr)
			}
		})
	}
}

// TestClient runs the client against real TLS servers on loopback.
func TestClient(t *testing.T) {
	var hits atomic.Int32
	target := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer target.Close()
	redirector := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/after-redirect", http.StatusFound)
	}))
	defer redirector.Close()
	roots := x509.NewCertPool()
	roots.AddCert(target.Certificate())
	_, port, _ := net.SplitHostPort(target.Listener.Addr().String())
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}

	post := func(p Policy, uri string) (*http.Response, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, uri, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := p.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return resp, err
	}

	t.Run("defaults_refuse_a_trusted_loopback_server", func(t *testing.T) {
		before := hits.Load()
		_, err := post(Policy{RootCAs: roots}, target.URL+"/x")
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "loopback") {
			t.Fatalf("err = %v, want refused as loopback", err)
		}
		if hits.Load() != before {
			t.Fatal("the refused server was reached")
		}
	})
	t.Run("defaults_refuse_a_name_that_resolves_to_loopback", func(t *testing.T) {
		_, err := post(Policy{RootCAs: roots}, "https://localhost:"+port+"/x")
		if !errors.Is(err, ErrRefused) {
			t.Fatalf("err = %v, want refused", err)
		}
	})
	t.Run("allow_list_admits_the_loopback_server", func(t *testing.T) {
		before := hits.Load()
		resp, err := post(Policy{RootCAs: roots, AllowedCIDRs: loopback}, target.URL+"/x")
		if err != nil || resp.StatusCode != http.StatusOK || hits.Load() != before+1 {
			t.Fatalf("resp %v, err %v, hits %d; want 200 and one hit", resp, err, hits.Load()-before)
		}
	})
	t.Run("plain_http_is_refused_even_when_the_address_is_allowed", func(t *testing.T) {
		plain := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("plain server reached") }))
		defer plain.Close()
		if _, err := post(Policy{AllowedCIDRs: loopback}, plain.URL); !errors.Is(err, ErrRefused) {
			t.Fatalf("err = %v, want refused", err)
		}
	})
	t.Run("redirect_is_returned_not_followed", func(t *testing.T) {
		before := hits.Load()
		resp, err := post(Policy{RootCAs: roots, AllowedCIDRs: loopback}, redirector.URL+"/x")
		if err != nil || resp.StatusCode != http.StatusFound || hits.Load() != before {
			t.Fatalf("resp %v, err %v, hits %d; want the 302 itself and no hit on its target", resp, err, hits.Load()-before)
		}
	})
}

func TestParseCIDRs(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: "", want: nil},
		{in: "127.0.0.1/32", want: []string{"127.0.0.1/32"}},
		{in: " 127.0.0.1 , ::1 ", want: []string{"127.0.0.1/32", "::1/128"}},
		{in: "10.0.0.0/8,fd00::/8", want: []string{"10.0.0.0/8", "fd00::/8"}},
		{in: "127.0.0.1/8", wantErr: true},
		{in: "localhost", wantErr: true},
		{in: "10.0.0.0/33", wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseCIDRs(tc.in)
			if tc.wantErr != (err != nil) {
				t.Fatalf("ParseCIDRs(%q) error %v, want error %v", tc.in, err, tc.wantErr)
			}
			var s []string
			for _, p := range got {
				s = append(s, p.String())
			}
			if strings.Join(s, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("ParseCIDRs(%q) = %v, want %v", tc.in, s, tc.want)
			}
		})
	}
}
