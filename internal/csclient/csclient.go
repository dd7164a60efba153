// Package csclient connects a region workload to Cluster Service's gRPC API. It owns the two
// rules every caller shares: the server must be Cluster Service (its certificate carries Cluster
// Service's name and, when the caller has its own certificate, its workload identity), and a
// caller without TLS files talks plaintext, which internal/tlsconfig allows only on loopback.
package csclient

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/openhcp/openhcp/internal/identity"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// Dial returns a client connection to Cluster Service at addr, with files as the caller's side
// of the connection (files.ServerName, when set, is kept). No connection is made until the first
// call, as with grpc.NewClient.
func Dial(addr string, files tlsconfig.Files) (*grpc.ClientConn, error) {
	cfg, err := files.Expecting(identity.ClusterService).Client(addr)
	if err != nil {
		return nil, fmt.Errorf("cluster service TLS: %w", err)
	}
	creds := insecure.NewCredentials()
	if cfg != nil {
		creds = credentials.NewTLS(cfg)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, fmt.Errorf("dial cluster service: %w", err)
	}
	return conn, nil
}
