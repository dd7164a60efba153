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

	log  *slog.Logger
	stop func() // drains and stops the gRPC server now serving Addr
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
	s := &Server{Store: db, Addr: "127.0.0.1:0", log: log}
	s.serve(tb)
	tb.Cleanup(func() { s.stop() })
	conn, err := grpc.NewClient(s.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	s.Conn = conn
	return s
}

// serve starts a gRPC server over s.Store on s.Addr and sets Addr to where it listens.
func (s *Server) serve(tb testing.TB) {
	tb.Helper()
	srv := server.New(s.Store, server.Config{KeepAlive: time.Second, Log: s.log})
	g := grpc.NewServer(srv.ServerOptions()...)
	srv.Register(g)
	l, err := net.Listen("tcp", s.Addr)
	if err != nil {
		tb.Fatal(err)
	}
	go func() { _ = g.Serve(l) }()
	s.Addr = l.Addr().String()
	s.stop = func() { srv.Drain(); g.Stop() }
}

// Stop stops the API as a shutdown does (watch streams told to drain); the store stays.
func (s *Server) Stop() { s.stop() }

// Serve starts the API again over the same store, on the same address, as a restart does:
// Conn reconnects to it.
func (s *Server) Serve(tb testing.TB) { s.serve(tb) }
