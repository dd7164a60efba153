// Package csclient connects a region workload to Cluster Service's gRPC API. It owns the two
// rules every caller shares: the server must be Cluster Service (its certificate carries Cluster
// Service's name and, when the caller has its own certificate, its workload identity), and a
// caller without TLS files talks plaintext, which internal/tlsconfig allows only on loopback.
package csclient

import (
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/openhcp/openhcp/internal/identity"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// reconnectBackoff is how a connection to Cluster Service is retried after it breaks (Cluster
// Service restarted, rolled or crashed). gRPC's default grows to two minutes, so a caller that
// saw a few refused attempts during a restart kept failing fast for seconds after Cluster
// Service was back; the hop is in-region, so an attempt every two seconds at most costs
// nothing and bounds that gap.
func reconnectBackoff() grpc.ConnectParams {
	return grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 250 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
		MinConnectTimeout: 20 * time.Second, // gRPC's own: a TLS handshake on a loaded host may be slow
	}
}

// Dial returns a client connection to Cluster Service at addr, with files as the caller's side
// of the connection (files.ServerName, when set, is kept). No connection is made until the first
// call, as with grpc.NewClient; a broken connection is retried as reconnectBackoff says.
func Dial(addr string, files tlsconfig.Files) (*grpc.ClientConn, error) {
	cfg, err := files.Expecting(identity.ClusterService).Client(addr)
	if err != nil {
		return nil, fmt.Errorf("cluster service TLS: %w", err)
	}
	creds := insecure.NewCredentials()
	if cfg != nil {
		creds = credentials.NewTLS(cfg)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds), grpc.WithConnectParams(reconnectBackoff()))
	if err != nil {
		return nil, fmt.Errorf("dial cluster service: %w", err)
	}
	return conn, nil
}
