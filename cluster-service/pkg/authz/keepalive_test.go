package authz

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/openhcp/openhcp/internal/identity"
	"github.com/openhcp/openhcp/internal/pki"
)

// countingListener counts the connections it accepted.
type countingListener struct {
	net.Listener
	n atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// A gRPC connection is kept for the life of a process: a call on a connection made before the
// client certificate expired must be refused once it has, as a call without a certificate is.
func TestCallOnAConnectionMadeBeforeExpiryIsRefusedAfterIt(t *testing.T) {
	ca, err := pki.NewAuthority("service CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	srvCert, err := ca.Issue(pki.Spec{CommonName: "cluster-service", Usage: pki.Server, Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srvPair, err := tls.X509KeyPair(srvCert.CertPEM, srvCert.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	frontendID, _ := identity.Of(identity.Frontend, identity.DefaultTrustDomain)

	for _, tc := range []struct {
		name     string
		lifetime time.Duration
		expire   bool // wait until the certificate's NotAfter has passed before the second call
		want     codes.Code
	}{
		{"certificate_still_valid_is_served_again", time.Hour, false, codes.OK},
		{"certificate_expired_since_the_handshake_is_unauthenticated", 2 * time.Second, true, codes.Unauthenticated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cert, err := ca.Issue(pki.Spec{CommonName: "frontend", Usage: pki.Client, Lifetime: tc.lifetime, URIs: []*url.URL{frontendID.URL()}})
			if err != nil {
				t.Fatal(err)
			}
			pair, err := tls.X509KeyPair(cert.CertPEM, cert.KeyPEM)
			if err != nil {
				t.Fatal(err)
			}
			creds := credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{srvPair}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert})
			g := grpc.NewServer(append([]grpc.ServerOption{grpc.Creds(creds)}, ServerOptions(identity.DefaultTrustDomain)...)...)
			healthpb.RegisterHealthServer(g, health.NewServer())
			inner, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			l := &countingListener{Listener: inner}
			go func() { _ = g.Serve(l) }()
			defer g.Stop()

			cc, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(credentials.NewTLS(
				&tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool, ServerName: "localhost"})))
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			hc := healthpb.NewHealthClient(cc)
			call := func() error {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				_, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
				return err
			}
			if err := call(); err != nil {
				t.Fatalf("first call: %v", err)
			}
			if tc.expire {
				// The condition is the clock passing NotAfter (whole seconds), not a tuned pause.
				for !time.Now().After(cert.Cert.NotAfter) {
					time.Sleep(time.Until(cert.Cert.NotAfter) + 10*time.Millisecond)
				}
			}
			if err := call(); status.Code(err) != tc.want {
				t.Errorf("call after the wait: %v, want code %s", err, tc.want)
			}
			if n := l.n.Load(); n != 1 {
				t.Errorf("the calls used %d connections, want 1 (the same connection)", n)
			}
		})
	}
}
