package main

import (
	"context"
	"net"
	"sync"
	"testing"
	_ "unsafe" // go:linkname

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	pbv1 "open-cluster-management.io/sdk-go/pkg/cloudevents/generic/options/grpc/protobuf/v1"
)

// maestroMetricsUnary is the pinned Maestro server's own first interceptor, the one that read a
// Publish's event without checking it.
//
//go:linkname maestroMetricsUnary github.com/openshift-online/maestro/cmd/maestro/server.newMetricsUnaryInterceptor
func maestroMetricsUnary() grpc.UnaryServerInterceptor

var guardOnce sync.Once

// publisher answers a Publish, or panics when told to, as a handler with a defect would.
type publisher struct {
	pbv1.UnimplementedCloudEventServiceServer
	panics bool
}

func (p *publisher) Publish(context.Context, *pbv1.PublishRequest) (*emptypb.Empty, error) {
	if p.panics {
		panic("a defect in a handler")
	}
	return &emptypb.Empty{}, nil
}

// event is a CloudEvent as Maestro's clients send one (binary encoding: a spec version and an
// attribute).
func event(id string) *pbv1.CloudEvent {
	return &pbv1.CloudEvent{Id: id, Source: "cluster-service", SpecVersion: "1.0", Type: "t",
		Attributes: map[string]*pbv1.CloudEventAttributeValue{
			"datacontenttype": {Attr: &pbv1.CloudEventAttributeValue_CeString{CeString: "application/json"}},
		}}
}

// TestGRPCGuard starts a gRPC server as the pinned Maestro's mutual-TLS server builds its chain
// (Maestro's metrics interceptor first, in grpc.ChainUnaryInterceptor) after installGRPCGuard,
// and sends what ended the real server: a Publish without an event (InvalidArgument now), and a
// call whose handler panics (Internal). The server answers a good call after both. Without the
// guard the first call's nil dereference in Maestro's interceptor ends this test's process.
func TestGRPCGuard(t *testing.T) {
	guardOnce.Do(func() {
		if err := installGRPCGuard(); err != nil {
			t.Fatal(err)
		}
	})
	for _, tc := range []struct {
		name   string
		req    *pbv1.PublishRequest
		panics bool
		want   codes.Code
	}{
		{"publish_without_an_event", &pbv1.PublishRequest{}, false, codes.InvalidArgument},
		{"handler_panics", &pbv1.PublishRequest{Event: event("1")}, true, codes.Internal},
		{"good_publish", &pbv1.PublishRequest{Event: event("2")}, false, codes.OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := grpc.NewServer(grpc.ChainUnaryInterceptor(maestroMetricsUnary()))
			pbv1.RegisterCloudEventServiceServer(srv, &publisher{panics: tc.panics})
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go func() { _ = srv.Serve(lis) }()
			defer srv.Stop()
			conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			client := pbv1.NewCloudEventServiceClient(conn)
			_, err = client.Publish(context.Background(), tc.req)
			if got := status.Code(err); got != tc.want {
				t.Fatalf("Publish: %v (code %s), want %s", err, got, tc.want)
			}
			// The server is still there.
			good := &pbv1.PublishRequest{Event: event("3")}
			if _, err := client.Publish(context.Background(), good); !tc.panics && err != nil {
				t.Fatalf("a good Publish after it: %v", err)
			}
		})
	}
}
