package access

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/pki"
)

// A kept-alive connection is served long after its handshake: Identify must refuse a client
// certificate that has expired since, on the same connection, as it refuses a caller without one.
func TestKeptAliveConnectionIsRefusedOnceItsCertificateExpires(t *testing.T) {
	personCA, err := pki.NewAuthority("person CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	serverCA, err := pki.NewAuthority("service CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	srvCert, err := serverCA.Issue(pki.Spec{CommonName: "admin", Usage: pki.Server, Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srvPair, err := tls.X509KeyPair(srvCert.CertPEM, srvCert.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(personCA.Cert)
	roots := x509.NewCertPool()
	roots.AddCert(serverCA.Cert)

	for _, tc := range []struct {
		name string
		// lifetime of the person's certificate; the second request waits until it has passed
		// when expire is set.
		lifetime time.Duration
		expire   bool
		wantCode int
	}{
		{"certificate_still_valid_is_served_again", time.Hour, false, http.StatusOK},
		{"certificate_expired_since_the_handshake_is_refused_401", 2 * time.Second, true, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			alice, err := personCA.Issue(pki.Spec{CommonName: "alice", Organization: []string{GroupAdmin}, Usage: pki.Client, Lifetime: tc.lifetime})
			if err != nil {
				t.Fatal(err)
			}
			var conns atomic.Int32
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				id, err := Identify(r.TLS)
				if err != nil {
					if !errors.Is(err, ErrNoIdentity) {
						t.Errorf("Identify = %v, want an error wrapping ErrNoIdentity", err)
					}
					http.Error(w, err.Error(), http.StatusUnauthorized)
					return
				}
				_, _ = io.WriteString(w, id.Person)
			}))
			srv.TLS = &tls.Config{Certificates: []tls.Certificate{srvPair}, ClientCAs: clientCAs, ClientAuth: tls.VerifyClientCertIfGiven}
			srv.Config.IdleTimeout = 10 * time.Minute
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			srv.StartTLS()
			defer srv.Close()

			pair, err := tls.X509KeyPair(alice.CertPEM, alice.KeyPEM)
			if err != nil {
				t.Fatal(err)
			}
			tr := &http.Transport{TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: roots, ServerName: "localhost"}}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr, Timeout: time.Minute}
			get := func() (int, string) {
				resp, err := client.Get(srv.URL)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}
			if code, body := get(); code != http.StatusOK || body != "alice" {
				t.Fatalf("first request: %d %q, want 200 \"alice\"", code, body)
			}
			if tc.expire {
				// The condition is the clock passing NotAfter (whole seconds), not a tuned pause.
				for !time.Now().After(alice.Cert.NotAfter) {
					time.Sleep(time.Until(alice.Cert.NotAfter) + 10*time.Millisecond)
				}
			}
			code, body := get()
			if code != tc.wantCode {
				t.Errorf("request after the wait: %d %q, want %d", code, body, tc.wantCode)
			}
			if n := conns.Load(); n != 1 {
				t.Errorf("the requests used %d connections, want 1 (the same kept-alive connection)", n)
			}
		})
	}
}
