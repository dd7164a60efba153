package localregion

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// TestClusterServiceClientRefusesAnotherServicesKey: every server of the region listens on
// 127.0.0.1 and chains to the same service CA, so a client that means to reach Cluster
// Service must be refused by a server presenting any other service's certificate (here the
// broker's, Prometheus's or the Maestro server's), whoever's key stole the port.
func TestClusterServiceClientRefusesAnotherServicesKey(t *testing.T) {
	p, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &Region{pki: p, cfg: Config{Progress: io.Discard}}
	for _, tc := range []struct {
		name   string
		server string
		served bool
	}{
		{"cluster_service_certificate_is_served", pki.ClusterService, true},
		{"broker_certificate_is_refused", pki.Broker, false},
		{"prometheus_certificate_is_refused", pki.Prometheus, false},
		{"maestro_server_certificate_is_refused", pki.MaestroServer, false},
		{"frontend_certificate_is_refused", pki.Frontend, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := serveHealth(t, p, tc.server)
			r.Info.ClusterService = ServiceInfo{GRPC: addr, ClientTLS: r.clusterServiceClientTLS(pki.SRE)}
			for _, dial := range []struct {
				how  string
				conn func() (*grpc.ClientConn, error)
			}{
				{"region.json", r.Info.ClusterService.Dial},
				{"as_sre", func() (*grpc.ClientConn, error) { return r.DialClusterServiceAs(pki.SRE) }},
				{"as_frontend", func() (*grpc.ClientConn, error) { return r.DialClusterServiceAs(pki.Frontend) }},
			} {
				conn, err := dial.conn()
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
				cancel()
				conn.Close()
				if tc.served && err != nil {
					t.Errorf("%s: Cluster Service's own certificate refused: %v", dial.how, err)
				}
				if !tc.served && status.Code(err) != codes.Unavailable {
					t.Errorf("%s: a server with the %s certificate answered as Cluster Service (err %v)", dial.how, tc.server, err)
				}
			}
		})
	}
}

// serveHealth serves gRPC health on loopback with identity's certificate, requiring a
// service-CA client certificate.
func serveHealth(t *testing.T, p *pki.Region, identity string) string {
	t.Helper()
	f := p.MustFiles(identity)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := tlsconfig.Files{CA: p.CAFile, Cert: f.Cert, Key: f.Key}.Server(l.Addr().String(), "h2")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.Creds(credentials.NewTLS(cfg)))
	healthpb.RegisterHealthServer(s, health.NewServer())
	go s.Serve(l)
	t.Cleanup(s.Stop)
	return l.Addr().String()
}
