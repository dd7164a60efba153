package frontend

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestClientCertificateAllowList runs the frontend behind a real TLS listener that verifies
// client certificates against a CA, as --tls-client-ca does, and checks who gets in.
func TestClientCertificateAllowList(t *testing.T) {
	ca, caKey := newTestCA(t)
	e := newEnv(t) // registers the test subscription over plain HTTP first
	e.srv.cfg.ClientSubjects = []string{"arm.example.net"}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	hs := httptest.NewUnstartedServer(e.srv.Handler())
	// VerifyClientCertIfGiven (rather than Require…) lets a request without a certificate reach
	// the middleware, so its answer is tested too; a certificate that does not verify never does.
	hs.TLS = &tls.Config{ClientCAs: pool, ClientAuth: tls.VerifyClientCertIfGiven}
	hs.StartTLS()
	t.Cleanup(hs.Close)
	otherCA, otherKey := newTestCA(t)

	sub := hs.URL + "/subscriptions/" + testSub + "?api-version=2.0"
	for _, tc := range []struct {
		name   string
		cert   *tls.Certificate
		method string
		path   string
		status int
	}{
		{"allowed_subject_is_served", clientCert(t, ca, caKey, "arm.example.net"), "GET", sub, 200},
		{"other_subject_is_403", clientCert(t, ca, caKey, "someone.else"), "GET", sub, 403},
		{"no_certificate_is_401", nil, "GET", sub, 401},
		{"healthz_needs_no_certificate", nil, "GET", hs.URL + "/healthz", 200},
		// Only the probe's GET is open: any other method on /healthz is a request like any other,
		// refused before its body is read (before, a POST without a certificate had its body read,
		// so a body that never came held its connection for the read timeout).
		{"healthz_post_needs_a_certificate", nil, "POST", hs.URL + "/healthz", 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := hs.Client().Transport.(*http.Transport).Clone()
			if tc.cert != nil {
				tr.TLSClientConfig.Certificates = []tls.Certificate{*tc.cert}
			}
			req, err := http.NewRequest(tc.method, tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := (&http.Client{Transport: tr}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if tc.status >= 400 && resp.Header.Get("x-ms-request-id") == "" {
				t.Fatal("rejection without x-ms-request-id")
			}
		})
	}
	t.Run("certificate_of_another_CA_fails_the_handshake", func(t *testing.T) {
		tr := hs.Client().Transport.(*http.Transport).Clone()
		tr.TLSClientConfig.Certificates = []tls.Certificate{*clientCert(t, otherCA, otherKey, "arm.example.net")}
		if resp, err := (&http.Client{Transport: tr}).Get(sub); err == nil {
			resp.Body.Close()
			t.Fatalf("status %d; want a TLS handshake failure", resp.StatusCode)
		}
	})
}

// TestClientCertificateExpiryOnAKeptAliveConnection: ARM keeps its connections alive, and
// the handshake verified the certificate once; a request after the certificate's NotAfter, on
// the same connection, is refused as one without a certificate is.
func TestClientCertificateExpiryOnAKeptAliveConnection(t *testing.T) {
	ca, caKey := newTestCA(t)
	e := newEnv(t)
	e.srv.cfg.ClientSubjects = []string{"arm.example.net"}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	var conns atomic.Int32
	hs := httptest.NewUnstartedServer(e.srv.Handler())
	hs.TLS = &tls.Config{ClientCAs: pool, ClientAuth: tls.VerifyClientCertIfGiven}
	hs.Config.IdleTimeout = 10 * time.Minute
	hs.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	hs.StartTLS()
	t.Cleanup(hs.Close)
	sub := hs.URL + "/subscriptions/" + testSub + "?api-version=2.0"

	for _, tc := range []struct {
		name     string
		lifetime time.Duration
		expire   bool // wait until the certificate's NotAfter has passed before the second request
		status   int
	}{
		{"certificate_still_valid_is_served_again", time.Hour, false, 200},
		{"certificate_expired_since_the_handshake_is_401", 2 * time.Second, true, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			notAfter := time.Now().Add(tc.lifetime).Truncate(time.Second)
			tr := hs.Client().Transport.(*http.Transport).Clone()
			tr.TLSClientConfig.Certificates = []tls.Certificate{*clientCertUntil(t, ca, caKey, "arm.example.net", notAfter)}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr, Timeout: time.Minute}
			before := conns.Load()
			get := func() int {
				resp, err := client.Get(sub)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.StatusCode
			}
			if code := get(); code != 200 {
				t.Fatalf("first request: status %d, want 200", code)
			}
			if tc.expire {
				// The condition is the clock passing NotAfter, not a tuned pause.
				for !time.Now().After(notAfter) {
					time.Sleep(time.Until(notAfter) + 10*time.Millisecond)
				}
			}
			if code := get(); code != tc.status {
				t.Errorf("request after the wait: status %d, want %d", code, tc.status)
			}
			if n := conns.Load() - before; n != 1 {
				t.Errorf("the requests used %d connections, want 1 (the same kept-alive connection)", n)
			}
		})
	}
}

func newTestCA(t *testing.T) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func clientCert(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn string) *tls.Certificate {
	t.Helper()
	return clientCertUntil(t, ca, caKey, cn, time.Now().Add(time.Hour))
}

func clientCertUntil(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn string, notAfter time.Time) *tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
