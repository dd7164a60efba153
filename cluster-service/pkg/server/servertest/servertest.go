// Package servertest runs a real Cluster Service for other services' tests: its store in a new
// database of a test PostgreSQL and its gRPC API on loopback, in plaintext and without the
// per-identity authorization (which cmd/cluster-service's tests cover).
package servertest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/openhcp/openhcp/cluster-service/pkg/server"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/internal/envelope/envelopetest"
	"github.com/openhcp/openhcp/internal/pgserver"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// Server is a running Cluster Service.
type Server struct {
	// Store is its store, for a test that sets up or checks state underneath the API.
	Store *store.Store
	// Addr is its gRPC address on 127.0.0.1.
	Addr string
	// Conn is a client connection to Addr.
	Conn *grpc.ClientConn
}

// Start runs Cluster Service on a new database of pg. Everything stops when the test ends,
// the server after its watch streams were told to drain.
func Start(tb testing.TB, pg *pgserver.Server) *Server {
	tb.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := store.Open(context.Background(), pgservertest.NewDatabase(tb, pg), log, envelopetest.Keyring(tb))
	if err != nil {
		tb.Fatalf("open cluster service store: %v", err)
	}
	tb.Cleanup(db.Close)
	srv := server.New(db, server.Config{KeepAlive: time.Second, Log: log})
	g := grpc.NewServer(srv.ServerOptions()...)
	srv.Register(g)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go func() { _ = g.Serve(l) }()
	tb.Cleanup(func() { srv.Drain(); g.Stop() })
	conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	return &Server{Store: db, Addr: l.Addr().String(), Conn: conn}
}
