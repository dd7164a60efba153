package server

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
	"github.com/openhcp/openhcp/cluster-service/pkg/versions"
)

// fuzzBaseCluster is a create request that validation accepts; the wire fuzzers merge their
// input into it, so a mutation changes some fields and keeps the rest valid, and the accepting
// path is reached as often as the refusing one.
func fuzzBaseCluster() *csv1.Cluster {
	return &csv1.Cluster{
		Id:            "0123456789abcdefghijklmnopqrstuv",
		ArmResourceId: "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c",
		Spec: &csv1.ClusterSpec{
			VersionId: "4.19",
			Azure: &csv1.AzureSpec{Location: "eastus",
				SubnetId:               "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/s",
				NetworkSecurityGroupId: "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg"},
		},
	}
}

// FuzzCreateClusterRequestWire decodes fuzzer bytes as the gRPC server does (protobuf wire
// format, merged over a valid request) and runs create validation on every field of the
// request, configuration included. The promises: validation never panics; every violation's
// field under the spec maps to an ARM path (so the frontend can name it to the client) unless
// it is a field the frontend sets itself, not the client (frontendOwned); and a
// spec it accepts builds into a ManifestWork whose every object round-trips through JSON
// unchanged (what the Maestro agent decodes is what was built).
func FuzzCreateClusterRequestWire(f *testing.F) {
	catalogue, err := versions.Default()
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []*csv1.ClusterSpec{
		{},
		{ApiVisibility: "Private", DnsBaseDomain: "example.com", Network: &csv1.NetworkSpec{PodCidr: "10.132.0.0/14", HostPrefix: 24}},
		{EtcdEncryptionKeyId: "https://kv1.vault.azure.net/keys/k/0123456789abcdef0123456789abcdef"},
		{NodeDrainTimeoutMinutes: 30, ImageRegistryState: "Disabled"},
		{Network: &csv1.NetworkSpec{PodCidr: "10.0.0.0/8", ServiceCidr: "10.0.0.0/16", HostPrefix: 30, NetworkType: "Calico"}},
		{Azure: &csv1.AzureSpec{Location: "EAST US", SubscriptionId: "x", WorkloadIdentities: &csv1.AzureWorkloadIdentities{}}},
	} {
		b, err := proto.Marshal(&csv1.CreateClusterRequest{Cluster: &csv1.Cluster{Spec: seed}})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	desc := (&csv1.CreateClusterRequest{}).ProtoReflect().Descriptor()
	now := time.Now()
	if _, err := validateCreate(&csv1.CreateClusterRequest{Cluster: fuzzBaseCluster()}, catalogue, now); err != nil {
		f.Fatalf("the base request is refused, so no input reaches Build: %v", err)
	}
	f.Fuzz(func(t *testing.T, wire []byte) {
		req := &csv1.CreateClusterRequest{Cluster: fuzzBaseCluster()}
		if err := (proto.UnmarshalOptions{Merge: true}).Unmarshal(wire, req); err != nil {
			return // the gRPC server refuses it before any handler
		}
		spec, err := validateCreate(req, catalogue, now)
		if err != nil {
			for _, fv := range namedViolations(t, err) {
				if !strings.HasPrefix(fv.GetField(), "cluster.spec.") {
					continue
				}
				if _, ok := csv1.ARMPath(desc, fv.GetField()); !ok && !frontendOwned(desc, fv.GetField()) {
					t.Fatalf("violation of %q has no ARM path: %s", fv.GetField(), fv.GetDescription())
				}
			}
			return
		}
		c := req.GetCluster()
		w, err := manifests.Build(manifests.Config{DevWorkloadIdentityClientID: "00000000-0000-0000-0000-000000000009"},
			manifests.Cluster{ID: c.GetId(), ARMResourceID: c.GetArmResourceId(), Spec: spec, EtcdEncryptionKey: bytes.Repeat([]byte{1}, 32), SSHPublicKey: "ssh-ed25519 AAAA"})
		if err != nil {
			t.Fatalf("validation accepted a spec that cannot be built: %v\nspec: %v", err, spec)
		}
		checkWorkRoundTrips(t, w)
	})
}

// frontendOwned says whether field names a field of root that does not come from the ARM request
// body (a field on the way has arm_path "-", or the path ends in a message that only holds
// others, arm_path "."): the frontend's own mistake, which has no ARM target.
func frontendOwned(root protoreflect.MessageDescriptor, field string) bool {
	md := root
	var last protoreflect.FieldDescriptor
	for _, seg := range strings.Split(field, ".") {
		if md == nil {
			return false // below a scalar or a map: ARMPath names those
		}
		name, _, _ := strings.Cut(seg, "[")
		fd := md.Fields().ByName(protoreflect.Name(name))
		if fd == nil {
			return false // a misspelt field
		}
		if csv1.ARMPathOf(fd) == "-" {
			return true
		}
		last, md = fd, nil
		if fd.Message() != nil && !fd.IsMap() {
			md = fd.Message()
		}
	}
	return last != nil && csv1.ARMPathOf(last) == "."
}

// checkWorkRoundTrips checks that a built ManifestWork and each object in it survive a JSON
// round trip: the work decodes and encodes to the same bytes, and every manifest is a JSON
// object that decodes and encodes to the same value.
func checkWorkRoundTrips(t *testing.T, w *workv1.ManifestWork) {
	t.Helper()
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatalf("encode work: %v", err)
	}
	var back workv1.ManifestWork
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("decode work: %v", err)
	}
	again, err := json.Marshal(&back)
	if err != nil || !bytes.Equal(b, again) {
		t.Fatalf("work does not round-trip through JSON (%v):\n%s\n%s", err, b, again)
	}
	for i, m := range w.Spec.Workload.Manifests {
		var obj map[string]any
		if err := json.Unmarshal(m.Raw, &obj); err != nil {
			t.Fatalf("manifest %d is not a JSON object: %v", i, err)
		}
		if obj["kind"] == nil || obj["apiVersion"] == nil {
			t.Fatalf("manifest %d has no kind or apiVersion: %s", i, m.Raw)
		}
		enc, err := json.Marshal(obj)
		if err != nil {
			t.Fatalf("manifest %d: encode: %v", i, err)
		}
		var obj2 map[string]any
		if err := json.Unmarshal(enc, &obj2); err != nil || !reflect.DeepEqual(obj, obj2) {
			t.Fatalf("manifest %d does not round-trip through JSON (%v): %s", i, err, m.Raw)
		}
	}
}

// namedViolations are the BadRequest field violations a validation error carries; an
// InvalidArgument without them fails the test (the frontend could not name the field).
func namedViolations(t *testing.T, err error) []*errdetails.BadRequest_FieldViolation {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok {
		t.Fatalf("validation error is not a gRPC status: %v", err)
	}
	var out []*errdetails.BadRequest_FieldViolation
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			out = append(out, br.GetFieldViolations()...)
		}
	}
	if len(out) == 0 {
		t.Fatalf("validation error without field violations: %v", err)
	}
	return out
}

// FuzzProvisionShardWire decodes a shard registration as the gRPC server does and validates it:
// never a panic, and a refusal always names its fields.
func FuzzProvisionShardWire(f *testing.F) {
	for _, seed := range []*csv1.ProvisionShard{
		{Name: "mc-1", MaxClusters: 10, Labels: map[string]string{"zone": "1"}},
		{Name: "MC_1", MaxClusters: -1, Status: 99, Labels: map[string]string{"": "x"}},
	} {
		b, err := proto.Marshal(seed)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, wire []byte) {
		var sh csv1.ProvisionShard
		if err := proto.Unmarshal(wire, &sh); err != nil {
			return
		}
		if err := validateShard(&sh); err != nil {
			namedViolations(t, err)
		}
	})
}

// FuzzExternalAuthSpecWire decodes an external auth spec as the gRPC server does and validates
// it: never a panic, a refusal always names its fields, and an accepted spec validates again
// unchanged (defaulting twice changes nothing).
func FuzzExternalAuthSpecWire(f *testing.F) {
	for _, seed := range []*csv1.ExternalAuthSpec{
		{},
		{Issuer: &csv1.TokenIssuer{Url: "https://issuer.example.com", Audiences: []string{"a"}}},
		{Issuer: &csv1.TokenIssuer{Url: "http://x", Audiences: []string{"", ""}}},
	} {
		b, err := proto.Marshal(seed)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, wire []byte) {
		var in csv1.ExternalAuthSpec
		if err := proto.Unmarshal(wire, &in); err != nil {
			return
		}
		var v violations
		out := model.ValidateExternalAuthSpec(v.model(), "external_auth.spec", &in)
		if err := v.err(); err != nil {
			namedViolations(t, err)
			return
		}
		var v2 violations
		again := model.ValidateExternalAuthSpec(v2.model(), "external_auth.spec", out)
		if err := v2.err(); err != nil {
			t.Fatalf("an accepted, normalised spec is refused when validated again: %v\nspec: %v", err, out)
		}
		if !proto.Equal(out, again) {
			t.Fatalf("normalising twice changes the spec:\n%v\n%v", out, again)
		}
	})
}
