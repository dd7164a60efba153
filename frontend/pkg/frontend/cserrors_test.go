package frontend

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/armspec"
)

func refusal(fields ...string) error {
	var fv []*errdetails.BadRequest_FieldViolation
	for _, f := range fields {
		fv = append(fv, &errdetails.BadRequest_FieldViolation{Field: f, Description: "is wrong"})
	}
	st, _ := status.New(codes.InvalidArgument, "invalid request: "+strings.Join(fields, "; ")).WithDetails(&errdetails.BadRequest{FieldViolations: fv})
	return st.Err()
}

// TestFieldViolations: Cluster Service's violations reach ARM with the field as the request's
// api-version spells it, one error per violation, and no proto name anywhere in the answer.
func TestFieldViolations(t *testing.T) {
	tests := []struct {
		name    string
		version string
		req     proto.Message
		fields  []string
		targets []string // "" : no target
	}{
		{"one_cluster_field", "2024-06-10-preview", &csv1.CreateClusterRequest{}, []string{"cluster.spec.network.host_prefix"}, []string{"properties.network.hostPrefix"}},
		{"two_cluster_fields", "2024-06-10-preview", &csv1.CreateClusterRequest{}, []string{"cluster.spec.version_id", "cluster.spec.network.host_prefix"},
			[]string{"properties.network.hostPrefix", "properties.version.id"}},
		{"kms_version_in_2024", "2024-06-10-preview", &csv1.UpdateClusterRequest{}, []string{"update.etcd_encryption_key_version"},
			[]string{"properties.etcd.dataEncryption.customerManaged.kms.activeKey.version"}},
		{"cidr_index", "2026-06-30-preview", &csv1.UpdateClusterRequest{}, []string{"update.api_authorized_cidrs.values[1]"}, []string{"properties.api.authorizedCidrs[1]"}},
		{"node_pool_create", "2026-06-30-preview", &csv1.CreateNodePoolRequest{}, []string{"node_pool.spec.platform.encryption_at_host", "node_pool.spec.taints[0].effect"},
			[]string{"properties.platform.enableEncryptionAtHost", "properties.taints[0].effect"}},
		{"node_pool_update", "2026-06-30-preview", &csv1.UpdateNodePoolRequest{}, []string{"update.taints.values[1].effect", "update.node_drain_timeout_minutes.value"},
			[]string{"properties.nodeDrainTimeoutMinutes", "properties.taints[1].effect"}},
		{"node_pool_update_platform_has_no_target", "2026-06-30-preview", &csv1.UpdateNodePoolRequest{}, []string{"spec.platform.os_disk_persistence"}, []string{""}},
		{"external_auth_update", "2026-06-30-preview", &csv1.UpdateExternalAuthRequest{}, []string{"update.claim_mappings.username.prefix"}, []string{"properties.claim.mappings.username.prefix"}},
		{"not_from_the_body", "2026-06-30-preview", &csv1.CreateClusterRequest{}, []string{"cluster.id"}, []string{""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ver, ok := api.Lookup(tc.version)
			if !ok {
				t.Fatalf("no api-version %s", tc.version)
			}
			err := fieldViolations(ver, tc.req, refusal(tc.fields...))
			if status.Code(err) != codes.InvalidArgument {
				t.Errorf("the gRPC status is lost: %v", status.Code(err))
			}
			ce, ok := arm.AsCloudError(err)
			if !ok || ce.StatusCode != http.StatusBadRequest {
				t.Fatalf("got %v, want a 400 CloudError", err)
			}
			bodies := []armdoc.CloudErrorBody{ce.CloudErrorBody}
			if len(tc.targets) > 1 {
				if ce.Code != arm.CodeMultipleErrorsOccurred || ce.Target != "" {
					t.Fatalf("code %s target %q, want %s without a target", ce.Code, ce.Target, arm.CodeMultipleErrorsOccurred)
				}
				bodies = ce.Details
			}
			if len(bodies) != len(tc.targets) {
				t.Fatalf("%d errors, want %d: %+v", len(bodies), len(tc.targets), ce)
			}
			for i, b := range bodies {
				if b.Code != arm.CodeInvalidRequestContent || b.Target != tc.targets[i] {
					t.Errorf("error %d: code %s target %q, want %s %q", i, b.Code, b.Target, arm.CodeInvalidRequestContent, tc.targets[i])
				}
				for _, f := range tc.fields {
					if strings.Contains(b.Message, f) || strings.Contains(b.Message, "_") {
						t.Errorf("error %d names a proto field: %q", i, b.Message)
					}
				}
			}
		})
	}
}

// TestFieldViolationsLeaveOtherErrors: only InvalidArgument with field violations is mapped.
func TestFieldViolationsLeaveOtherErrors(t *testing.T) {
	ver, _ := api.Lookup("2026-06-30-preview")
	for _, err := range []error{nil, status.Error(codes.InvalidArgument, "no details"), status.Error(codes.Unavailable, "down")} {
		if got := fieldViolations(ver, &csv1.CreateClusterRequest{}, err); got != err {
			t.Errorf("fieldViolations(%v) = %v, want it unchanged", err, got)
		}
	}
}

// TestPutClusterFieldViolations drives Cluster Service's refusal of a create through the PUT
// handler: one violation is one InvalidRequestContent with its target, two are
// MultipleErrorsOccurred with one detail and target each; the answer names no proto field
// although Cluster Service's own status message does, and nothing is left behind.
func TestPutClusterFieldViolations(t *testing.T) {
	e := newEnv(t)
	type violation struct{ field, desc string }
	hostPrefix := violation{"cluster.spec.network.host_prefix", "must be between 23 and 26, not 21"}
	version := violation{"cluster.spec.version_id", `version "4.1" is not offered in channel group stable`}
	tests := []struct {
		name       string
		violations []violation
		code       string
		targets    []string // the error's target for one, the details' targets for several
	}{
		{"one", []violation{hostPrefix}, "InvalidRequestContent", []string{"properties.network.hostPrefix"}},
		{"two", []violation{version, hostPrefix}, "MultipleErrorsOccurred", []string{"properties.network.hostPrefix", "properties.version.id"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var fv []*errdetails.BadRequest_FieldViolation
			var msgs []string
			for _, v := range tc.violations {
				fv = append(fv, &errdetails.BadRequest_FieldViolation{Field: v.field, Description: v.desc})
				msgs = append(msgs, v.field+": "+v.desc)
			}
			st, err := status.New(codes.InvalidArgument, "invalid request: "+strings.Join(msgs, "; ")).WithDetails(&errdetails.BadRequest{FieldViolations: fv})
			if err != nil {
				t.Fatal(err)
			}
			e.cs.setCreateErr(st.Err())
			defer e.cs.setCreateErr(nil)

			path := clusterPath("rg", "refused-"+tc.name)
			resp := e.put(path, minimalBody())
			if resp.code != http.StatusBadRequest {
				t.Fatalf("status %d: %s", resp.code, resp.body)
			}
			var b struct {
				Error armdoc.CloudErrorBody `json:"error"`
			}
			if err := json.Unmarshal(resp.body, &b); err != nil {
				t.Fatal(err)
			}
			if code, _ := resp.armError(t); code != tc.code {
				t.Fatalf("code %s, want %s: %s", code, tc.code, resp.body)
			}
			var targets []string
			if len(tc.targets) == 1 {
				if len(b.Error.Details) != 0 {
					t.Errorf("one error with details: %s", resp.body)
				}
				targets = []string{b.Error.Target}
			} else {
				if b.Error.Target != "" {
					t.Errorf("MultipleErrorsOccurred with target %q", b.Error.Target)
				}
				for _, d := range b.Error.Details {
					if d.Code != arm.CodeInvalidRequestContent || d.Message == "" {
						t.Errorf("detail %+v, want InvalidRequestContent with a message", d)
					}
					targets = append(targets, d.Target)
				}
			}
			if strings.Join(targets, ",") != strings.Join(tc.targets, ",") {
				t.Errorf("targets %v, want %v: %s", targets, tc.targets, resp.body)
			}
			for _, v := range tc.violations {
				if strings.Contains(string(resp.body), v.field) || strings.Contains(string(resp.body), "_") {
					t.Errorf("the answer names a proto field: %s", resp.body)
				}
			}
			if rd, _ := e.resource(path); rd != nil {
				t.Errorf("the refused create left a resource document: %+v", rd)
			}
		})
	}
}

// TestUnmappedRefusalNamesNoProtoField: a refusal with field violations that no request maps
// (fieldViolations was not given one) answers with the descriptions, not with Cluster Service's
// status message, which names proto fields.
func TestUnmappedRefusalNamesNoProtoField(t *testing.T) {
	st, _ := status.FromError(refusal("cluster.spec.network.host_prefix", "cluster.spec.version_id"))
	ce := (&Server{}).grpcToCloudError(st)
	if ce.StatusCode != http.StatusBadRequest || ce.Code != arm.CodeInvalidRequestContent || ce.Message != "Is wrong. Is wrong." {
		t.Fatalf("got %d %s %q", ce.StatusCode, ce.Code, ce.Message)
	}
	plain, _ := status.FromError(status.Error(codes.InvalidArgument, "the version is not offered"))
	if ce := (&Server{}).grpcToCloudError(plain); ce.Message != "the version is not offered" {
		t.Fatalf("a message without violations: %q", ce.Message)
	}
}

// TestARMPathsAreSpecProperties: every field of the requests the frontend sends Cluster Service
// targets, through its arm_path and an api-version's ExternalPath, a property the specification
// declares — spelt and cased as in the spec — in at least one api-version (a field newer than
// some versions cannot be sent in them).
func TestARMPathsAreSpecProperties(t *testing.T) {
	definitions := []struct {
		req  proto.Message
		name string
	}{
		{&csv1.CreateClusterRequest{}, "HcpOpenShiftCluster"}, {&csv1.UpdateClusterRequest{}, "HcpOpenShiftCluster"},
		{&csv1.CreateNodePoolRequest{}, "NodePool"}, {&csv1.UpdateNodePoolRequest{}, "NodePool"},
		{&csv1.CreateExternalAuthRequest{}, "ExternalAuth"}, {&csv1.UpdateExternalAuthRequest{}, "ExternalAuth"},
	}
	specs := map[string]*armspec.Spec{}
	for _, v := range api.Versions() {
		s, err := armspec.Load(v)
		if err != nil {
			t.Fatal(err)
		}
		specs[v] = s
	}
	// The check itself tells a declared property from a miscased one.
	if s := specs["2025-12-23-preview"]; s == nil || !declared(t, s, "HcpOpenShiftCluster", "properties.network.hostPrefix") ||
		declared(t, s, "HcpOpenShiftCluster", "properties.network.hostprefix") || !declared(t, s, "NodePool", "properties.taints[0].effect") ||
		declared(t, s, "NodePool", "properties.taints[0].Effect") {
		t.Fatal("declared does not tell declared properties from undeclared ones")
	}
	checked := 0
	for _, d := range definitions {
		md := d.req.ProtoReflect().Descriptor()
		for _, field := range requestFieldPaths(md, "", 0) {
			internal, ok := csv1.ARMPath(md, field)
			if !ok {
				continue // not from the request body
			}
			checked++
			var tried []string
			found := false
			for v, s := range specs {
				ver, _ := api.Lookup(v)
				p := ver.ExternalPath(internal)
				tried = append(tried, v+": "+p)
				if declared(t, s, d.name, p) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s %s: ARM path %s is not a property of %s in any api-version (%v)", md.Name(), field, internal, d.name, tried)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("checked only %d fields", checked)
	}
}

// requestFieldPaths lists md's field paths as Cluster Service's violations spell them.
func requestFieldPaths(md protoreflect.MessageDescriptor, prefix string, depth int) []string {
	var out []string
	for i := 0; i < md.Fields().Len() && depth < 8; i++ {
		fd := md.Fields().Get(i)
		p := prefix + string(fd.Name())
		if fd.IsList() {
			p += "[0]"
		}
		out = append(out, p)
		if fd.Message() != nil && !fd.IsMap() && csv1.ARMPathOf(fd) != "-" {
			out = append(out, requestFieldPaths(fd.Message(), p+".", depth+1)...)
		}
	}
	return out
}

// declared reports whether definition declares the property at path ("a.b[0].c"): a body with
// only that property set draws no "property not in the schema".
func declared(t *testing.T, s *armspec.Spec, definition, path string) bool {
	t.Helper()
	var body any = "x"
	segs := strings.Split(path, ".")
	for i := len(segs) - 1; i >= 0; i-- {
		name, idx, _ := strings.Cut(segs[i], "[")
		if idx != "" {
			body = []any{body}
		}
		body = map[string]any{name: body}
	}
	err := s.ValidateDefinition(definition, mustJSON(body))
	var vs armspec.Violations
	if err != nil && !errors.As(err, &vs) {
		t.Fatalf("validate %s against %s: %v", path, definition, err)
	}
	for _, v := range vs {
		if strings.Contains(v.Message, "not in the schema") {
			return false
		}
	}
	return true
}
