package e2e

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	pbv1 "open-cluster-management.io/sdk-go/pkg/cloudevents/generic/options/grpc/protobuf/v1"
)

// TestMaestroServerRefusesAPublishWithoutAnEvent sends the region's Maestro server, over its
// mutual-TLS gRPC API with Cluster Service's own identity (the one the server admits), a Publish
// that carries no event: valid protobuf of zero bytes. It must be refused InvalidArgument and the
// server must stay the same process. The pinned server dereferenced the missing event in its
// metrics interceptor and exited (a probe of a running region); our command's guard refuses it
// first (dev-infrastructure/maestro/cmd/maestro/grpcguard.go).
func TestMaestroServerRefusesAPublishWithoutAnEvent(t *testing.T) {
	needsOwnRegion(t, "checks its Maestro server's PID")
	const server = "maestro-server"
	before, err := region.ComponentPID(server)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := region.Info.Maestro.ClientTLS.Files().Client(region.Info.Maestro.GRPC)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(region.Info.Maestro.GRPC, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 2 {
		_, err = pbv1.NewCloudEventServiceClient(conn).Publish(ctx, &pbv1.PublishRequest{})
		if status.Code(err) != codes.InvalidArgument {
			t.Fatalf("Publish without an event (%d): %v (code %s), want InvalidArgument", i+1, err, status.Code(err))
		}
	}
	if after, err := region.ComponentPID(server); err != nil || after != before {
		t.Fatalf("the Maestro server is process %d after the calls (%v), was %d: it ended", after, err, before)
	}
}
