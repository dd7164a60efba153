package frontend

import (
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/rolesets"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// TestSpecExamplesRoleSets drives the HcpOperatorIdentityRoleSets examples of every api-version:
// our responses validate against the spec's schema, and what is served is the
// configured catalogue.
func TestSpecExamplesRoleSets(t *testing.T) {
	cat, err := rolesets.Parse([]byte(`{"roleSets":[
	  {"versions":["4.19","4.20"],"controlPlaneOperators":[{"name":"ingress","required":"Always","roleDefinitions":[{"name":"Ingress","resourceId":"/providers/Microsoft.Authorization/roleDefinitions/0336e1d3-7a87-462b-b6db-342b63f7802c"}]}],"dataPlaneOperators":[]},
	  {"versions":["4.9"],"controlPlaneOperators":[],"dataPlaneOperators":[{"name":"image-registry","required":"OnEnablement","roleDefinitions":[{"name":"Registry","resourceId":"/providers/Microsoft.Authorization/roleDefinitions/8b32b316-c2f5-4ddf-b05b-83dacd2d08b5"}]}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *Config) { c.RoleSets = cat })
	for _, ver := range specVersions {
		t.Run(ver, func(t *testing.T) {
			so := loadSpecOperations(t, ver)
			xs := loadExamples(t, ver, "HcpOperatorIdentityRoleSets_")
			if len(xs) != 2 {
				t.Fatalf("%d examples; want List and Get", len(xs))
			}
			for _, x := range xs {
				sub := x.param(t, "subscriptionId")
				e.registerSubscription(sub, armdoc.SubscriptionRegistered)
				base := "/subscriptions/" + sub + "/providers/Microsoft.RedHatOpenShift/locations/" + testLocation + "/hcpOperatorIdentityRoleSets"
				q := "?api-version=" + x.param(t, "api-version")
				switch x.OperationID {
				case "HcpOperatorIdentityRoleSets_List":
					resp := e.do("GET", base+q, nil, nil)
					if resp.code != 200 {
						t.Fatalf("%s: %d %s", x.file, resp.code, resp.body)
					}
					so.checkResponse(t, x.OperationID, resp)
					var names []string
					for _, it := range resp.json(t)["value"].([]any) {
						names = append(names, it.(map[string]any)["name"].(string))
					}
					if strings.Join(names, ",") != "4.9,4.19,4.20" {
						t.Fatalf("names %v; want the catalogue's minors in numeric order", names)
					}
				case "HcpOperatorIdentityRoleSets_Get":
					resp := e.do("GET", base+"/4.20"+q, nil, nil)
					if resp.code != 200 {
						t.Fatalf("%s: %d %s", x.file, resp.code, resp.body)
					}
					so.checkResponse(t, x.OperationID, resp)
					body := resp.json(t)
					props := body["properties"].(map[string]any)
					cp := props["controlPlaneOperators"].([]any)
					if body["id"] != base+"/4.20" || body["name"] != "4.20" || len(cp) != 1 || cp[0].(map[string]any)["name"] != "ingress" {
						t.Fatalf("role set %s", resp.body)
					}
					if dp, ok := props["dataPlaneOperators"].([]any); !ok || len(dp) != 0 {
						t.Fatalf("dataPlaneOperators must be an empty array, got %v", props["dataPlaneOperators"])
					}
					resp = e.do("GET", base+"/"+x.param(t, "hcpOperatorIdentityRoleSetName")+q, nil, nil)
					if code, _ := resp.armError(t); resp.code != 404 || code != "ResourceNotFound" {
						t.Fatalf("unknown role set: %d %s", resp.code, resp.body)
					}
					// The ID keeps the path's spelling (the routed path is lowercased).
					mixed := "/subscriptions/" + sub + "/providers/Microsoft.RedHatOpenShift/locations/EastUS/hcpOperatorIdentityRoleSets/4.20"
					if got := e.do("GET", mixed+q, nil, nil).json(t)["id"]; got != mixed {
						t.Fatalf("id %v, want %s", got, mixed)
					}
					resp = e.do("GET", "/subscriptions/"+sub+"/providers/Microsoft.RedHatOpenShift/locations/westeurope/hcpOperatorIdentityRoleSets/4.20"+q, nil, nil)
					if resp.code != 404 {
						t.Fatalf("another location: %d %s", resp.code, resp.body)
					}
				default:
					t.Fatalf("example %s of unexpected operation %s", x.file, x.OperationID)
				}
			}
		})
	}
}
