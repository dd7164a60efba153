package v20240610preview

import (
	"encoding/json"
	"io/fs"
	"path"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armspec"
)

const sub = "00000000-0000-0000-0000-000000000001"

// minimalBody is the smallest body this version accepts.
const minimalBody = `{
  "location": "eastus",
  "identity": {"type": "UserAssigned", "userAssignedIdentities": {
    "/subscriptions/` + sub + `/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/smi": {}}},
  "properties": {"platform": {
    "subnetId": "/subscriptions/` + sub + `/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/s",
    "networkSecurityGroupId": "/subscriptions/` + sub + `/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg",
    "operatorsAuthentication": {"userAssignedIdentities": {"controlPlaneOperators": {}, "dataPlaneOperators": {},
      "serviceManagedIdentity": "/subscriptions/` + sub + `/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/smi"}}}}
}`

func decode(t *testing.T, body string) (*api.Cluster, *arm.CloudError) {
	t.Helper()
	c, err := cluster.DecodeCluster([]byte(body))
	if err == nil {
		return c, nil
	}
	ce, ok := arm.AsCloudError(err)
	if !ok {
		t.Fatalf("decode returned a non-ARM error %v", err)
	}
	if ce.StatusCode != 400 {
		t.Fatalf("decode error status %d, want 400", ce.StatusCode)
	}
	return nil, ce
}

// TestDecodeClusterLeavesDefaultsToClusterService: what Cluster Service's spec holds stays
// empty when the body leaves it out (Cluster Service defaults it, model.DefaultCluster); only
// what the frontend's model alone holds (the key management mode) is defaulted here.
func TestDecodeClusterLeavesDefaultsToClusterService(t *testing.T) {
	c, ce := decode(t, minimalBody)
	if ce != nil {
		t.Fatalf("minimal body rejected: %v", ce)
	}
	p := c.Spec
	if !proto.Equal(p.GetNetwork(), &csv1.NetworkSpec{}) || p.GetApiVisibility() != "" || p.GetAzure().GetOutboundType() != "" ||
		c.Etcd.KeyManagementMode != "PlatformManaged" || p.GetImageRegistryState() != "" ||
		p.GetChannelGroup() != "" || p.GetIngressVisibility() != "" || p.GetCryptoRestrictions() != "" || c.Location != "eastus" {
		t.Fatalf("decoded: %v %+v", p, c.Etcd)
	}
}

func TestDecodeClusterSpecExample(t *testing.T) {
	b, err := fs.ReadFile(armspec.FS(), path.Join(armspec.VersionDir(APIVersion), "examples", "HcpOpenShiftClusters_CreateOrUpdate_MaximumSet_Gen.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ex struct {
		Parameters struct {
			Resource json.RawMessage `json:"resource"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(b, &ex); err != nil {
		t.Fatal(err)
	}
	c, ce := decode(t, string(ex.Parameters.Resource))
	if ce != nil {
		t.Fatalf("spec example rejected: %v", ce)
	}
	if c.Spec.GetNetwork().GetHostPrefix() != 21 || c.Etcd.CustomerManaged.KMS.Name != "my-cool-key" ||
		c.Spec.GetNodeDrainTimeoutMinutes() != 20 || len(c.Spec.GetApiAuthorizedCidrs()) != 2 {
		t.Fatalf("example decoded as %v %+v", c.Spec, c.Etcd)
	}
	// Round trip: rendering and decoding again gives the same model.
	out, _ := json.Marshal(cluster.RenderCluster(c))
	c2, ce := decode(t, string(out))
	if ce != nil {
		t.Fatalf("rendered cluster rejected: %v\n%s", ce, out)
	}
	a, _ := json.Marshal(c)
	b2, _ := json.Marshal(c2)
	if string(a) != string(b2) {
		t.Fatalf("round trip changed the model:\n%s\n%s", a, b2)
	}
}

func patch(t *testing.T, path []string, value any) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(minimalBody), &m); err != nil {
		t.Fatal(err)
	}
	cur := m
	for _, k := range path[:len(path)-1] {
		next, ok := cur[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[k] = next
		}
		cur = next
	}
	if value == nil {
		delete(cur, path[len(path)-1])
	} else {
		cur[path[len(path)-1]] = value
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func TestDecodeClusterRejects(t *testing.T) {
	p := func(s string) []string { return strings.Split(s, ".") }
	for _, tc := range []struct {
		name       string
		body       string
		code       string
		target     string
		detailsLen int
	}{
		{"unknown_top_level_field", patch(t, p("bogus"), 1), "InvalidRequestContent", "bogus", 0},
		{"unknown_nested_field", patch(t, p("properties.network.podCIDRs"), "x"), "InvalidRequestContent", "properties.network.podCIDRs", 0},
		{"wrong_type", patch(t, p("properties.network.hostPrefix"), "23"), "InvalidRequestContent", "properties.network.hostPrefix", 0},
		{"missing_location", patch(t, p("location"), nil), "InvalidRequestContent", "location", 0},
		{"missing_subnet", patch(t, p("properties.platform.subnetId"), nil), "InvalidRequestContent", "properties.platform.subnetId", 0},
		{"subnet_of_wrong_type", patch(t, p("properties.platform.subnetId"), "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/x"), "InvalidRequestContent", "properties.platform.subnetId", 0},
		{"bad_enum", patch(t, p("properties.api.visibility"), "Internal"), "InvalidRequestContent", "properties.api.visibility", 0},
		{"bad_cidr", patch(t, p("properties.network.podCidr"), "10.0.0.0/33"), "InvalidRequestContent", "properties.network.podCidr", 0},
		// Overlapping blocks and a hostPrefix out of range are Cluster Service's rules, not the
		// decoder's (TestClusterNetworkRulesAgree in the frontend's handlers).
		{"drain_timeout_out_of_range", patch(t, p("properties.nodeDrainTimeoutMinutes"), 10081), "InvalidRequestContent", "properties.nodeDrainTimeoutMinutes", 0},
		{"base_domain_prefix_pattern", patch(t, p("properties.dns.baseDomainPrefix"), "Bad_Prefix"), "InvalidRequestContent", "properties.dns.baseDomainPrefix", 0},
		{"customer_managed_without_key", patch(t, p("properties.etcd.dataEncryption.keyManagementMode"), "CustomerManaged"), "InvalidRequestContent", "properties.etcd.dataEncryption.customerManaged", 0},
		{"service_identity_not_assigned", patch(t, p("identity"), nil), "InvalidRequestContent", "properties.platform.operatorsAuthentication.userAssignedIdentities.serviceManagedIdentity", 0},
		{"several_problems", patch(t, p("properties.platform"), map[string]any{"outboundType": "Nat"}), "MultipleErrorsOccurred", "", 4},
		{"not_json", `{"location":`, "InvalidRequestContent", "", 0},
		{"not_an_object", `[1,2]`, "InvalidRequestContent", "", 0},
		{"trailing_data", minimalBody + `{}`, "InvalidRequestContent", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ce := decode(t, tc.body)
			if ce == nil {
				t.Fatalf("accepted %s", tc.body)
			}
			if ce.Code != tc.code || ce.Target != tc.target || len(ce.Details) != tc.detailsLen {
				t.Fatalf("got %s target %q with %d details (%v); want %s target %q with %d", ce.Code, ce.Target, len(ce.Details), ce.Details, tc.code, tc.target, tc.detailsLen)
			}
			if ce.Message == "" {
				t.Fatal("error without a message")
			}
		})
	}
}

func FuzzDecodeCluster(f *testing.F) {
	f.Add(minimalBody)
	f.Add(`{"properties":{"network":{"hostPrefix":99999999999}}}`)
	f.Add(`{"tags":{"a":"b"},"identity":{"userAssignedIdentities":{"x":null}}}`)
	f.Add(`{"properties":{"etcd":{"dataEncryption":{"customerManaged":{"kms":{}}}}}}`)
	f.Fuzz(func(t *testing.T, body string) {
		c, err := cluster.DecodeCluster([]byte(body))
		if err != nil {
			ce, ok := arm.AsCloudError(err)
			if !ok || ce.StatusCode != 400 || ce.Code == "" || ce.Message == "" {
				t.Fatalf("bad input gave %v; want a 400 ARM error", err)
			}
			return
		}
		// Anything accepted renders and is accepted again.
		out, err := json.Marshal(cluster.RenderCluster(c))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cluster.DecodeCluster(out); err != nil {
			t.Fatalf("rendered cluster rejected: %v\n%s", err, out)
		}
	})
}

// TestWriteToAStoredClusterIsCheckedAsACreate: this version checks a write to a stored cluster
// as a create (codec.Cluster.CheckAsCreate), so an explicit empty version.id is refused even for
// a cluster stored without one, as it was before the versions shared one decoder.
func TestWriteToAStoredClusterIsCheckedAsACreate(t *testing.T) {
	body := patch(t, []string{"properties", "version"}, map[string]any{"id": ""})
	stored := &api.Cluster{} // stored without a version.id
	_, err := cluster.DecodeClusterUpdate([]byte(body), stored)
	ce, ok := arm.AsCloudError(err)
	if !ok || ce.Target != "properties.version.id" {
		t.Fatalf("write with an empty version.id to a cluster stored without one: %v, want an error at properties.version.id", err)
	}
}
