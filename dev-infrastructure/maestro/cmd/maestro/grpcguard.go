package main

import (
	"context"
	"fmt"
	"runtime/debug"
	_ "unsafe" // go:linkname

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
	pbv1 "open-cluster-management.io/sdk-go/pkg/cloudevents/generic/options/grpc/protobuf/v1"
)

// The pinned Maestro server's gRPC API (cmd/maestro/server, NewGRPCServer) runs its metrics
// interceptor first, before the authorizer and the handler, and that interceptor turns a
// Publish's event into a CloudEvent without checking that the request has one: a PublishRequest
// with no event (valid protobuf, zero bytes) dereferences nil, and the server has no panic
// recovery, so one such call from any client that passes the handshake ended the whole server
// (exit 2; a probe of a running region, with Cluster Service's certificate). Maestro has no
// option for its interceptors; grpc-go's global server options (the variable behind
// grpc/internal.AddGlobalServerOptions, reached here as the command already reaches Maestro's
// package variables) are applied by every grpc.NewServer before the server's own options, so an
// interceptor chained there runs ahead of Maestro's chain. That holds for the mutual-TLS server
// the region runs (--grpc-authn-type=mtls: Maestro chains its interceptors); Maestro's server
// without authentication sets its metrics interceptor as the single grpc.UnaryInterceptor,
// which grpc-go runs before any chained one, so there the guard's recovery still applies but
// runs after the metrics interceptor.

//go:linkname addGlobalServerOptions google.golang.org/grpc/internal.AddGlobalServerOptions
var addGlobalServerOptions any

// installGRPCGuard chains guardUnary and guardStream ahead of every gRPC server's own
// interceptors. It fails if the pinned grpc-go no longer has the hook in this form.
func installGRPCGuard() error {
	add, ok := addGlobalServerOptions.(func(...grpc.ServerOption))
	if !ok {
		return fmt.Errorf("grpc-go's global server options hook is %T, not func(...grpc.ServerOption)", addGlobalServerOptions)
	}
	add(grpc.ChainUnaryInterceptor(guardUnary), grpc.ChainStreamInterceptor(guardStream))
	return nil
}

// guardUnary refuses a Publish without an event (InvalidArgument) before Maestro's interceptors
// read it, and answers Internal for a panic in what follows instead of ending the process.
func guardUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	if pub, ok := req.(*pbv1.PublishRequest); ok && pub.GetEvent() == nil {
		return nil, status.Error(codes.InvalidArgument, "publish request without an event")
	}
	defer func() {
		if p := recover(); p != nil {
			klog.Errorf("gRPC %s panicked, answered Internal: %v\n%s", info.FullMethod, p, debug.Stack())
			resp, err = nil, status.Error(codes.Internal, "internal error")
		}
	}()
	return handler(ctx, req)
}

// guardStream answers Internal for a panic in a streaming call instead of ending the process.
func guardStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			klog.Errorf("gRPC stream %s panicked, answered Internal: %v\n%s", info.FullMethod, p, debug.Stack())
			err = status.Error(codes.Internal, "internal error")
		}
	}()
	return handler(srv, ss)
}
