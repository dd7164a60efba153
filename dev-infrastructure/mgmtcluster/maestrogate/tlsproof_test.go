package maestrogate

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
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

// TestClientCertProofGRPC: ClientCertProof on a gRPC server as Maestro runs its own (grpc-go,
// TLS 1.3 only, a client certificate of its CA required), through a forward capped at one
// connection. A client with its certificate is proven once the server has answered its first
// call (the server's SETTINGS after the client's second flight, then the answer to its request)
// and keeps its slot against a waiting caller; a client without a certificate, or with another
// CA's, gets one encrypted alert, is never proven, and its connection ends with the server's.
func TestClientCertProofGRPC(t *testing.T) {
	ca, other := newTestCA(t), newTestCA(t)
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{ca.issue(t, "server", x509.ExtKeyUsageServerAuth)},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.pool, MinVersion: tls.VersionTLS13, MaxVersion: tls.VersionTLS13})))
	go func() { _ = gs.Serve(gl) }()
	t.Cleanup(gs.Stop)
	for _, tc := range []struct {
		name   string
		cert   []tls.Certificate
		cache  bool // a session cache: the client offers resumption, and the server sends a ticket
		proven bool
	}{
		{"with_its_certificate", []tls.Certificate{ca.issue(t, "client", x509.ExtKeyUsageClientAuth)}, false, true},
		{"with_its_certificate_and_a_session_ticket", []tls.Certificate{ca.issue(t, "client", x509.ExtKeyUsageClientAuth)}, true, true},
		{"without_a_certificate", nil, true, false},
		{"with_another_cas_certificate", []tls.Certificate{other.issue(t, "client", x509.ExtKeyUsageClientAuth)}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = l.Close() })
			var proven atomic.Bool
			f := NewForwarder(ForwardLimits{MaxConns: 1, Proof: func() Proof { return &watchedProof{Proof: ClientCertProof(), proven: &proven} }},
				func(ctx context.Context) (net.Conn, error) {
					var d net.Dialer
					return d.DialContext(ctx, "tcp", gl.Addr().String())
				}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			go f.Serve(l)

			cfg := &tls.Config{ServerName: "server", RootCAs: ca.pool, Certificates: tc.cert}
			if tc.cache {
				cfg.ClientSessionCache = tls.NewLRUClientSessionCache(1)
			}
			var dials atomic.Int32
			conn, err := grpc.NewClient("passthrough:///"+l.Addr().String(), grpc.WithTransportCredentials(credentials.NewTLS(cfg)),
				grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
					dials.Add(1)
					var d net.Dialer
					return d.DialContext(ctx, "tcp", addr)
				}))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// answered: the server answers a call of a method it does not have Unimplemented.
			answered := func() error {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := conn.Invoke(ctx, "/test.Nothing/Here", &emptypb.Empty{}, &emptypb.Empty{}); status.Code(err) != codes.Unimplemented {
					return fmt.Errorf("a call: %v, want Unimplemented from the server", err)
				}
				return nil
			}
			err = answered()
			if !tc.proven {
				if err == nil {
					t.Fatal("a client the server must refuse was answered")
				}
				// The server closed the connection after its alert; so has the forward.
				deadline := time.Now().Add(10 * time.Second)
				for f.Active() > 0 && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
				}
				if f.Active() > 0 {
					t.Fatal("the forwarded connection outlived the server's end of it")
				}
				if proven.Load() {
					t.Fatal("a client without a certificate of the server's CA was proven")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !proven.Load() {
				t.Fatal("a client the server answered was not proven")
			}
			// A waiting caller at the cap: the proven connection stays.
			second, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer second.Close()
			_, _ = second.Write([]byte{0x16})
			// Three times UnfinishedGrace: a connection that could be closed for room would be.
			for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline) && dials.Load() == 1; {
				time.Sleep(20 * time.Millisecond)
			}
			if err := answered(); err != nil {
				t.Fatal(err)
			}
			if n := dials.Load(); n != 1 {
				t.Fatalf("the client dialled %d times: its proven connection was closed for room", n)
			}
		})
	}
}

// watchedProof is a Proof that records whether it ever said proven.
type watchedProof struct {
	Proof
	proven *atomic.Bool
}

func (w *watchedProof) FromTarget(b []byte) bool {
	ok := w.Proof.FromTarget(b)
	if ok {
		w.proven.Store(true)
	}
	return ok
}
