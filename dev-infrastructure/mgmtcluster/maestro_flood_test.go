package mgmtcluster

import (
	"context"
	"crypto/tls"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/serverlimits/floodtest"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// TestMaestroGRPCOutlastsAFlood starts the real Maestro server as the region does (mutual TLS on
// gRPC, its namespace, the host's forward of the gRPC port, here capped at 20) and fills the
// forward's cap from a process holding no certificate of the region: ClientHello-only and
// one-byte sockets and whole handshakes without a certificate or with another CA's, each held
// open. None of them
// is silent, so under the silent rule they held every slot until Maestro's handshake timeout
// (120 s) or the forward's idle timeout (2 min) and Cluster Service could not reach Maestro. A
// gRPC client with a region-CA certificate must still be answered within 10 s, and a client
// answered before the flood must keep its connection.
func TestMaestroGRPCOutlastsAFlood(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const maxConns = 20
	m := startSecureMaestro(ctx, t, secureMaestroOptions{rest: clusterServiceREST, grpcMaxConns: maxConns})
	region, stranger, srv := m.region, m.stranger, m.srv
	cs := region.MustFiles(pki.ClusterService)

	// clusterService is a gRPC client with Cluster Service's certificate; dials counts the
	// connections it opened.
	clusterService := func(dials *atomic.Int32) *grpc.ClientConn {
		t.Helper()
		cfg, err := tlsconfig.Files{CA: region.CAFile, Cert: cs.Cert, Key: cs.Key, ServerName: pki.ServerName(pki.MaestroServer)}.Client(srv.GRPCAddr)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := grpc.NewClient("passthrough:///"+srv.GRPCAddr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)),
			grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
				dials.Add(1)
				var d net.Dialer
				return d.DialContext(ctx, "tcp", addr)
			}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		return conn
	}
	// answered: Maestro answers a Publish without an event InvalidArgument (its guard), within
	// wait: a round trip through the forward to the real server.
	answered := func(conn *grpc.ClientConn, wait time.Duration) error {
		cctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		err := conn.Invoke(cctx, "/io.cloudevents.v1.CloudEventService/Publish", &emptypb.Empty{}, &emptypb.Empty{})
		if status.Code(err) == codes.InvalidArgument {
			return nil
		}
		if err == nil {
			err = status.Error(codes.OK, "a Publish without an event was accepted")
		}
		return err
	}

	var earlyDials atomic.Int32
	early := clusterService(&earlyDials)
	if err := answered(early, 30*time.Second); err != nil {
		t.Fatalf("Cluster Service before the flood: %v", err)
	}

	hello := floodtest.CaptureClientHello(t, &tls.Config{ServerName: pki.ServerName(pki.MaestroServer), MinVersion: tls.VersionTLS13, NextProtos: []string{"h2"}})
	serverOnly, err := tlsconfig.Files{CA: region.CAFile, ServerName: pki.ServerName(pki.MaestroServer)}.Client(srv.GRPCAddr)
	if err != nil {
		t.Fatal(err)
	}
	sf := stranger.MustFiles(pki.ClusterService)
	strangerCert, err := tlsconfig.Files{CA: region.CAFile, Cert: sf.Cert, Key: sf.Key, ServerName: pki.ServerName(pki.MaestroServer)}.Client(srv.GRPCAddr)
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []*tls.Config{serverOnly, strangerCert} {
		cfg.NextProtos = []string{"h2"}
	}
	// The flood: more than twice the cap, each held open; none silent. A handshake without a
	// certificate or with a stranger's does not hold its slot long by itself (Maestro resets the
	// connection with the rest of the caller's flight unread, which closes the forwarded one),
	// but it is part of the flood a proof must never keep.
	flood := floodtest.Start(ctx, t, srv.GRPCAddr, 2*maxConns+10, hello, func(i int) floodtest.Conn {
		switch i % 4 {
		case 0:
			return floodtest.Conn{Kind: floodtest.ClientHello}
		case 1:
			return floodtest.Conn{Kind: floodtest.Handshake, TLS: serverOnly}
		case 2:
			return floodtest.Conn{Kind: floodtest.OneByte}
		default:
			return floodtest.Conn{Kind: floodtest.Handshake, TLS: strangerCert}
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for srv.GRPCForward.Active() < maxConns && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("forwarded gRPC connections after the flood: %d (cap %d)", srv.GRPCForward.Active(), maxConns)

	var lateDials atomic.Int32
	late := clusterService(&lateDials)
	start := time.Now()
	if err := answered(late, 10*time.Second); err != nil {
		t.Fatalf("Cluster Service through the flood: not answered within 10 s: %v", err)
	}
	t.Logf("Cluster Service was answered through the flood in %v", time.Since(start).Round(time.Millisecond))
	flood.Wait()
	if err := answered(early, 10*time.Second); err != nil {
		t.Errorf("Cluster Service's connection from before the flood: %v", err)
	}
	if n := earlyDials.Load(); n != 1 {
		t.Errorf("Cluster Service's client from before the flood dialled %d times: its connection was closed for room", n)
	}
}
