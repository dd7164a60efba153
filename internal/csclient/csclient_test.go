package csclient

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"

	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// TestDial dials real gRPC servers on loopback: Cluster Service's own certificate is accepted,
// another service's certificate on the same port is refused, and plaintext works only on
// loopback.
func TestDial(t *testing.T) {
	p, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	backend := p.MustFiles(pki.Backend)
	asBackend := tlsconfig.Files{CA: p.CAFile, Cert: backend.Cert, Key: backend.Key}
	for _, tc := range []struct {
		name    string
		server  string // PKI identity the server presents; empty serves plaintext
		files   tlsconfig.Files
		addr    string // dialed instead of the server's address when set
		dialErr string
		served  bool
	}{
		{name: "cluster_service_certificate_is_served", server: pki.ClusterService, files: asBackend, served: true},
		{name: "frontend_certificate_is_refused", server: pki.Frontend, files: asBackend},
		{name: "broker_certificate_is_refused", server: pki.Broker, files: asBackend},
		{name: "plaintext_on_loopback_is_served", served: true},
		{name: "plaintext_to_a_remote_address_is_refused", addr: "cs.example.com:8090", dialErr: "loopback"},
		{name: "certificate_without_key_is_refused", files: tlsconfig.Files{CA: p.CAFile, Cert: backend.Cert}, addr: "127.0.0.1:1", dialErr: "both a certificate and a key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := tc.addr
			if addr == "" {
				addr = serveHealth(t, p, tc.server)
			}
			conn, err := Dial(addr, tc.files)
			if tc.dialErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.dialErr) {
					t.Fatalf("Dial(%s) error = %v, want one containing %q", addr, err, tc.dialErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Dial(%s): %v", addr, err)
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
			if tc.served {
				if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
					t.Fatalf("health check = %v, %v; want SERVING", resp, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("a server presenting %s's certificate answered as Cluster Service", tc.server)
			}
		})
	}
}

// serveHealth serves gRPC health on loopback: plaintext when identity is empty, else mutual TLS
// with identity's certificate.
func serveHealth(t *testing.T, p *pki.Region, identity string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var opts []grpc.ServerOption
	if identity != "" {
		f := p.MustFiles(identity)
		cfg, err := tlsconfig.Files{CA: p.CAFile, Cert: f.Cert, Key: f.Key}.Server(l.Addr().String(), "h2")
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg)))
	}
	s := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(s, health.NewServer())
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return l.Addr().String()
}

// TestReconnectionResumesTheSession: when Cluster Service's connection drops (a restart of the
// listener, an idle cut), the client's next connection resumes its TLS session instead of a
// full mutual-TLS handshake, and the server still sees the caller's verified identity.
func TestReconnectionResumesTheSession(t *testing.T) {
	p, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cs, backend := p.MustFiles(pki.ClusterService), p.MustFiles(pki.Backend)
	cfg, err := tlsconfig.Files{CA: p.CAFile, Cert: cs.Cert, Key: cs.Key}.Server("127.0.0.1:0", "h2")
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		resumed bool
		who     string
	}
	calls := make(chan seen, 16)
	record := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if pr, ok := peer.FromContext(ctx); ok {
			if ti, ok := pr.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.VerifiedChains) > 0 {
				calls <- seen{ti.State.DidResume, ti.State.VerifiedChains[0][0].Subject.CommonName}
			}
		}
		return handler(ctx, req)
	}
	serve := func(addr string) (*grpc.Server, string) {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		s := grpc.NewServer(grpc.Creds(credentials.NewTLS(cfg)), grpc.UnaryInterceptor(record))
		healthpb.RegisterHealthServer(s, health.NewServer())
		go func() { _ = s.Serve(l) }()
		return s, l.Addr().String()
	}
	srv, addr := serve("127.0.0.1:0")
	conn, err := Dial(addr, tlsconfig.Files{CA: p.CAFile, Cert: backend.Cert, Key: backend.Key})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	check := func(want seen) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		// The first call after the drop may still meet the dropped connection; the client
		// reconnects by itself, so try again until the deadline.
		for {
			_, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatal(err)
			}
		}
		if got := <-calls; got != want {
			t.Fatalf("server saw %+v, want %+v", got, want)
		}
	}
	check(seen{false, pki.Backend})
	check(seen{false, pki.Backend}) // the same connection: no new handshake
	srv.Stop()
	// The same listener's config (its ticket keys) on the same address, as after a dropped connection.
	srv, _ = serve(addr)
	defer srv.Stop()
	check(seen{true, pki.Backend})
}

// TestReconnectIsRetriedEveryFewSeconds keeps a caller calling (as the frontend's watch and
// requests do) while nothing answers at Cluster Service's address: a listener that accepts and
// at once closes every connection, noting when. gRPC's default backoff waits 1, 1.6, 2.6, 4.1,
// 6.6, 10.5 s … (each up to 20% shorter or longer by jitter, up to two minutes); Dial's reconnect
// backoff caps the wait at 2 s (2.4 s with jitter), so a restarted Cluster Service is found within
// about 2 s of being back. The test takes the median of the 4th to 7th waits: at least 5.2 s
// with the default, at most 2.4 s with the cap, so a late timer on a busy machine does not decide.
func TestReconnectIsRetriedEveryFewSeconds(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan time.Time, 1000)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- time.Now()
			c.Close()
		}
	}()
	conn, err := Dial(l.Addr().String(), tlsconfig.Files{})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	var at []time.Time
	for deadline := time.Now().Add(3 * time.Minute); len(at) < 8; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d connection attempts in 3 minutes of calls", len(at))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, _ = hc.Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		for len(accepted) > 0 {
			at = append(at, <-accepted)
		}
	}
	var waits []time.Duration
	for i := 4; i < 8; i++ { // the waits after the 4th, 5th, 6th and 7th attempt's failure
		waits = append(waits, at[i].Sub(at[i-1]))
	}
	slices.Sort(waits)
	if median := (waits[1] + waits[2]) / 2; median > 4*time.Second {
		t.Fatalf("median wait between later connection attempts %s (waits %v); want at most about 2 s", median, waits)
	}
}
