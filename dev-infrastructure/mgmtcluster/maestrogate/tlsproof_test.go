package maestrogate

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log/slog"
	"math/big"
	"net"
	"testing"
	"time"
)

// testCA issues certificates for the proof's tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

func (ca *testCA) issue(t *testing.T, cn string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn}, DNSNames: []string{cn},
		ExtKeyUsage: []x509.ExtKeyUsage{usage}, KeyUsage: x509.KeyUsageDigitalSignature, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// startMTLSEcho serves TLS with a client certificate of ca required, at most maxVersion, and
// echoes what a verified client sends.
func startMTLSEcho(t *testing.T, ca *testCA, maxVersion uint16) string {
	t.Helper()
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{ca.issue(t, "server", x509.ExtKeyUsageServerAuth)},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.pool, MinVersion: tls.VersionTLS12, MaxVersion: maxVersion})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 1024)
				for {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					if _, err := c.Write(buf[:n]); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// TestClientCertProof: through a forward capped at one connection with ClientCertProof, a caller
// that made a handshake with its certificate and was answered twice after it keeps its slot
// against a waiting caller, under TLS 1.2 and 1.3; one that made a handshake without a
// certificate or with another CA's is closed (the server closes it, and the forward its caller's
// side), and one with its certificate not yet answered twice is closed for the waiting caller.
func TestClientCertProof(t *testing.T) {
	ca, other := newTestCA(t), newTestCA(t)
	mine := []tls.Certificate{ca.issue(t, "client", x509.ExtKeyUsageClientAuth)}
	for _, tc := range []struct {
		name       string
		maxVersion uint16
		cert       []tls.Certificate
		rounds     int // answers the caller asks for after its handshake
		proven     bool
	}{
		{"tls12_with_its_certificate", tls.VersionTLS12, mine, 2, true},
		{"tls13_with_its_certificate", tls.VersionTLS13, mine, 2, true},
		{"tls13_with_its_certificate_answered_once", tls.VersionTLS13, mine, 0, false},
		{"tls12_without_a_certificate", tls.VersionTLS12, nil, 2, false},
		{"tls13_without_a_certificate", tls.VersionTLS13, nil, 2, false},
		{"tls13_with_another_cas_certificate", tls.VersionTLS13, []tls.Certificate{other.issue(t, "client", x509.ExtKeyUsageClientAuth)}, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := startMTLSEcho(t, ca, tc.maxVersion)
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = l.Close() })
			f := NewForwarder(ForwardLimits{MaxConns: 1, Proof: ClientCertProof}, func(ctx context.Context) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "tcp", target)
			}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			go f.Serve(l)

			raw, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			first := tls.Client(raw, &tls.Config{ServerName: "server", RootCAs: ca.pool, Certificates: tc.cert})
			_ = first.SetDeadline(time.Now().Add(30 * time.Second))
			// The server checks the certificate after the client's side of the handshake is
			// done: under TLS 1.3 the alert comes with the first read after it.
			if err := first.Handshake(); err == nil {
				for range tc.rounds {
					if _, err := first.Write([]byte("hi")); err != nil {
						break
					}
					if _, err := io.ReadFull(first, make([]byte, 2)); err != nil {
						break
					}
				}
			}
			_ = first.SetDeadline(time.Time{})

			second, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer second.Close()
			_, _ = second.Write([]byte{0x16}) // a byte proves nothing, but it is a caller
			// Served: the forward dials the target for it, which then waits for a ClientHello.
			wait := 30 * time.Second
			if tc.proven {
				wait = 3 * time.Second // three times UnfinishedGrace
			}
			deadline := time.Now().Add(wait)
			for f.Active() < 1 || !closedOrStale(first) {
				if time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			closed := closedOrStale(first)
			switch {
			case tc.proven && closed:
				t.Fatal("a proven connection was closed for room")
			case !tc.proven && !closed:
				t.Fatal("an unproven connection kept its slot against a waiting caller")
			}
			if tc.proven {
				if _, err := first.Write([]byte("ok")); err != nil {
					t.Fatalf("the proven connection: %v", err)
				}
				_ = first.SetReadDeadline(time.Now().Add(30 * time.Second))
				if _, err := io.ReadFull(first, make([]byte, 2)); err != nil {
					t.Fatalf("the proven connection: %v", err)
				}
			}
		})
	}
}

// closedOrStale reports whether c's forward closed it: a read ends at once with an error other
// than a timeout.
func closedOrStale(c *tls.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	_ = c.SetReadDeadline(time.Time{})
	if err == nil {
		return false
	}
	ne, ok := err.(net.Error)
	return !ok || !ne.Timeout()
}
