package server

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/metricstest"
	"github.com/openhcp/openhcp/internal/pki"
)

// rawCodec sends a request's bytes as they are ([]byte) and keeps a response's bytes
// (*[]byte), so a test can send what no generated client would.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.([]byte))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*(v.(*[]byte)) = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "proto" }

// field is the wire bytes of field num holding the length-delimited value b.
func field(num protowire.Number, b []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
}

// undecodable is, per method, request bytes grpc's protobuf codec refuses.
var undecodable = []struct {
	name, method string
	stream       bool
	wire         []byte
	reason       string // in the answer's message
}{
	{name: "GetCluster id of invalid UTF-8", method: csv1.Clusters_GetCluster_FullMethodName,
		wire: field(1, []byte("abc\xffdef")), reason: "invalid UTF-8"},
	{name: "CreateCluster cluster.spec.version_id of invalid UTF-8", method: csv1.Clusters_CreateCluster_FullMethodName,
		wire: createWithVersion("4.19\xfe"), reason: "invalid UTF-8"},
	{name: "GetCluster truncated", method: csv1.Clusters_GetCluster_FullMethodName,
		wire: []byte{0x0a, 0x10, 'a', 'b'}, reason: "cannot parse"},
	{name: "ListClusters field number 0", method: csv1.Clusters_ListClusters_FullMethodName,
		wire: []byte{0x00, 0x01}, reason: "cannot parse"},
	{name: "WatchClusters truncated varint", method: csv1.Clusters_WatchClusters_FullMethodName, stream: true,
		wire: []byte{0x08, 0xff}, reason: "cannot parse"},
	{name: "WatchNodePools since_revision of the wrong wire type", method: csv1.NodePools_WatchNodePools_FullMethodName, stream: true,
		wire: []byte{0x0a, 0x05, 0x01}, reason: "cannot parse"},
}

// createWithVersion is a CreateClusterRequest's wire bytes whose cluster.spec.version_id is
// version, which may be invalid UTF-8 (proto.Marshal would refuse to write it).
func createWithVersion(version string) []byte {
	num := func(m proto.Message, name string) protowire.Number {
		return m.ProtoReflect().Descriptor().Fields().ByName(protoreflect.Name(name)).Number()
	}
	spec := field(num(&csv1.ClusterSpec{}, "version_id"), []byte(version))
	cluster := append(field(num(&csv1.Cluster{}, "id"), []byte(id(1))), field(num(&csv1.Cluster{}, "spec"), spec)...)
	return field(num(&csv1.CreateClusterRequest{}, "cluster"), cluster)
}

// callRaw sends wire to method (a unary method, or a server-streaming one whose first answer
// is read) on conn and returns the call's error.
func callRaw(ctx context.Context, conn grpc.ClientConnInterface, method string, stream bool, wire []byte) error {
	if !stream {
		var out []byte
		return conn.Invoke(ctx, method, wire, &out, grpc.ForceCodecV2(rawCodec{}))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, method, grpc.ForceCodecV2(rawCodec{}))
	if err != nil {
		return err
	}
	if err := s.SendMsg(wire); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if err := s.CloseSend(); err != nil {
		return err
	}
	var out []byte
	return s.RecvMsg(&out)
}

// TestUndecodableRequestIsInvalidArgument: a request whose bytes do not decode (invalid UTF-8
// in a string, a truncated or malformed message) is the caller's error, unary or streaming,
// counted and logged as one; grpc-go alone answers Internal, which pages for nothing. The
// connection and the server go on serving valid requests, through the same codec.
func TestUndecodableRequestIsInvalidArgument(t *testing.T) {
	e := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, tc := range undecodable {
		t.Run(tc.name, func(t *testing.T) {
			err := callRaw(ctx, e.conn, tc.method, tc.stream, tc.wire)
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("answer %v, want InvalidArgument", err)
			}
			if msg := status.Convert(err).Message(); !strings.HasPrefix(msg, "request could not be decoded: ") || !strings.Contains(msg, tc.reason) {
				t.Errorf("message %q, want \"request could not be decoded: ...%s...\"", msg, tc.reason)
			}
			if n := metricstest.Sum(t, e.reg, "cluster_service_grpc_requests_total", "method", tc.method, "code", "InvalidArgument"); n < 1 {
				t.Errorf("cluster_service_grpc_requests_total{method=%q,code=InvalidArgument} = %v, want at least 1", tc.method, n)
			}
		})
	}
	if n := metricstest.Sum(t, e.reg, "cluster_service_grpc_requests_total", "code", "Internal"); n != 0 {
		t.Errorf("%v requests counted Internal, want 0", n)
	}
	// Logged as a client error: "request finished" at INFO with the reason.
	for _, line := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(line, "request could not be decoded") && !strings.Contains(line, `"level":"INFO"`) {
			t.Errorf("decode refusal logged above INFO: %s", line)
		}
	}
	if n := strings.Count(e.logs.String(), `"code":"InvalidArgument"`); n < len(undecodable) {
		t.Errorf("%d requests logged InvalidArgument, want %d", n, len(undecodable))
	}

	// Valid requests after them: typed, and raw bytes through the same server codec.
	e.register(t, "s1", 10)
	if _, err := e.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: validCluster(1, "c1")}); err != nil {
		t.Fatalf("create after undecodable requests: %v", err)
	}
	wire, err := proto.Marshal(&csv1.GetClusterRequest{Id: id(1)})
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	if err := e.conn.Invoke(ctx, csv1.Clusters_GetCluster_FullMethodName, wire, &out, grpc.ForceCodecV2(rawCodec{})); err != nil {
		t.Fatalf("valid raw GetCluster: %v", err)
	}
	var got csv1.Cluster
	if err := proto.Unmarshal(out, &got); err != nil || got.GetId() != id(1) {
		t.Fatalf("valid raw GetCluster answered %v (%v), want cluster %s", &got, err, id(1))
	}
	w, err := e.clusters.WatchClusters(ctx, &csv1.WatchClustersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := w.Recv()
	if err != nil || ev.GetCluster().GetId() != id(1) {
		t.Fatalf("watch after undecodable requests: %v, %v; want cluster %s", ev, err, id(1))
	}
}

// TestUndecodableRequestAfterAuthorization: the decode refusal comes after authz, so a caller
// the table refuses learns nothing from its bytes (PermissionDenied whatever it sends), and an
// allowed caller is told InvalidArgument.
func TestUndecodableRequestAfterAuthorization(t *testing.T) {
	e := startMTLS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name, method, as string
		stream           bool
		wire             []byte
		want             codes.Code
	}{
		{"maintenance may not create", csv1.Clusters_CreateCluster_FullMethodName, pki.Maintenance, false, createWithVersion("4.19\xfe"), codes.PermissionDenied},
		{"frontend may create", csv1.Clusters_CreateCluster_FullMethodName, pki.Frontend, false, createWithVersion("4.19\xfe"), codes.InvalidArgument},
		{"maintenance may not watch", csv1.Clusters_WatchClusters_FullMethodName, pki.Maintenance, true, []byte{0x08, 0xff}, codes.PermissionDenied},
		{"backend may watch", csv1.Clusters_WatchClusters_FullMethodName, pki.Backend, true, []byte{0x08, 0xff}, codes.InvalidArgument},
		// A NUL decodes (it is valid UTF-8) and is refused as the store cannot hold it
		// (nulStrings): after authz too.
		{"maintenance may not create a NUL", csv1.Clusters_CreateCluster_FullMethodName, pki.Maintenance, false, createWithVersion("4.19\x00"), codes.PermissionDenied},
		{"frontend may create a NUL", csv1.Clusters_CreateCluster_FullMethodName, pki.Frontend, false, createWithVersion("4.19\x00"), codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := callRaw(ctx, e.as[tc.as], tc.method, tc.stream, tc.wire); status.Code(err) != tc.want {
				t.Fatalf("answer %v, want %v", err, tc.want)
			}
		})
	}
}

// TestDecodeArmsOnlyWhileDecoding: the codec records a failure only for a message a wrapped
// handler armed, and every decode leaves no entry behind, whether the bytes decoded, did not,
// or grpc's decoder failed on its own (a transport error) or panicked.
func TestDecodeArmsOnlyWhileDecoding(t *testing.T) {
	f := &decodeFailures{}
	codec := f.codec()
	good, err := proto.Marshal(&csv1.GetClusterRequest{Id: id(1)})
	if err != nil {
		t.Fatal(err)
	}
	bad := field(1, []byte("a\xffb"))
	unmarshal := func(b []byte) func(any) error {
		return func(m any) error { return codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, m) }
	}
	errTransport := status.Error(codes.Unavailable, "transport closed")
	for _, tc := range []struct {
		name         string
		dec          func(any) error
		wantRefusal  bool
		wantErr      error
		wantID       string
		wantPanicked bool
	}{
		{name: "decodes", dec: unmarshal(good), wantID: id(1)},
		{name: "does not decode", dec: unmarshal(bad), wantRefusal: true},
		{name: "decoder fails", dec: func(any) error { return errTransport }, wantErr: errTransport},
		{name: "decoder panics", dec: func(any) error { panic("boom") }, wantPanicked: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &csv1.GetClusterRequest{}
			var refusal, err error
			panicked := func() (p bool) {
				defer func() { p = recover() != nil }()
				refusal, err = f.decode(m, tc.dec)
				return false
			}()
			if panicked != tc.wantPanicked || (refusal != nil) != tc.wantRefusal || !errors.Is(err, tc.wantErr) {
				t.Fatalf("refusal %v, error %v, panicked %v", refusal, err, panicked)
			}
			if tc.wantRefusal && (status.Code(refusal) != codes.InvalidArgument || m.GetId() != "") {
				t.Errorf("refusal %v with message %v, want InvalidArgument and an empty message", refusal, m)
			}
			if m.GetId() != tc.wantID {
				t.Errorf("message id %q, want %q", m.GetId(), tc.wantID)
			}
			n := 0
			f.armed.Range(func(any, any) bool { n++; return true })
			if n != 0 {
				t.Errorf("%d messages still armed", n)
			}
		})
	}
	// Unarmed (a service registered without the wrappers, the health service): grpc's answer.
	if err := unmarshal(bad)(&csv1.GetClusterRequest{}); err == nil {
		t.Error("an unarmed message that does not decode: no error")
	}
}
