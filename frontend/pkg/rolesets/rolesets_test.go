package rolesets

import (
	"strings"
	"testing"
)

func TestDefaultCatalogue(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	list := c.List()
	if len(list) == 0 || list[0].Version != "4.17" || list[len(list)-1].Version != "4.21" {
		t.Fatalf("versions not ordered oldest first: %+v", list)
	}
	rs, ok := c.Get("4.19")
	if !ok {
		t.Fatal("4.19 missing")
	}
	names := map[string]bool{}
	for _, op := range rs.ControlPlaneOperators {
		names[op.Name] = true
	}
	// The seven control plane operator identities Cluster Service passes to HyperShift, plus the
	// control plane operator itself.
	for _, want := range []string{"cluster-api-azure", "control-plane", "cloud-controller-manager", "ingress", "disk-csi-driver", "file-csi-driver", "image-registry", "cloud-network-config"} {
		if !names[want] {
			t.Errorf("control plane operator %s missing", want)
		}
	}
	if _, ok := c.Get("4.99"); ok {
		t.Fatal("unknown version found")
	}
}

func TestParseRejectsBadFiles(t *testing.T) {
	const role = `{"name":"r","resourceId":"/providers/Microsoft.Authorization/roleDefinitions/88366f10-ed47-4cc0-9fab-c8a06148393e"}`
	op := func(name, required, roles string) string {
		return `{"name":"` + name + `","required":"` + required + `","roleDefinitions":[` + roles + `]}`
	}
	set := func(versions, cp string) string {
		return `{"roleSets":[{"versions":[` + versions + `],"controlPlaneOperators":[` + cp + `],"dataPlaneOperators":[]}]}`
	}
	for _, tc := range []struct{ name, file, want string }{
		{"valid", set(`"4.19"`, op("a", "Always", role)), ""},
		{"unknown_top_key", `{"roleSet":[]}`, `unknown key "roleSet"`},
		{"unknown_nested_key", `{"roleSets":[{"versions":["4.19"],"extra":1}]}`, `unknown field "extra"`},
		{"not_a_minor", set(`"4.19.1"`, op("a", "Always", role)), "not a minor version"},
		{"no_versions", set(``, op("a", "Always", role)), "versions is empty"},
		{"duplicate_version", `{"roleSets":[` + strings.TrimSuffix(strings.TrimPrefix(set(`"4.19"`, ""), `{"roleSets":[`), `]}`) + `,` + strings.TrimSuffix(strings.TrimPrefix(set(`"4.19"`, ""), `{"roleSets":[`), `]}`) + `]}`, "listed twice"},
		{"bad_required", set(`"4.19"`, op("a", "Sometimes", role)), `required is "Sometimes"`},
		{"duplicate_operator", set(`"4.19"`, op("a", "Always", role)+","+op("a", "Always", role)), "operator a is listed twice"},
		{"no_roles", set(`"4.19"`, op("a", "Always", "")), "has no roleDefinitions"},
		{"bad_role_id", set(`"4.19"`, op("a", "Always", `{"name":"r","resourceId":"/subscriptions/x/providers/Microsoft.Authorization/roleDefinitions/1"}`)), "needs a name and a resourceId"},
		{"not_json", `{`, "operator identity role sets"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.file))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestNewestAndNames(t *testing.T) {
	role := `[{"name": "r", "resourceId": "/providers/Microsoft.Authorization/roleDefinitions/88366f10-ed47-4cc0-9fab-c8a06148393e"}]`
	for _, c := range []struct {
		name, file  string
		wantVersion string
		wantOK      bool
		wantNames   string
	}{
		{"empty_catalogue_has_none", `{"roleSets": []}`, "", false, ""},
		{"newest_is_numeric_not_lexical", `{"roleSets": [
			{"versions": ["4.9", "4.10"], "controlPlaneOperators": [{"name": "b", "required": "Always", "roleDefinitions": ` + role + `}, {"name": "a", "required": "OnEnablement", "roleDefinitions": ` + role + `}], "dataPlaneOperators": []}]}`,
			"4.10", true, "b,a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cat, err := Parse([]byte(c.file))
			if err != nil {
				t.Fatal(err)
			}
			rs, ok := cat.Newest()
			if rs.Version != c.wantVersion || ok != c.wantOK {
				t.Fatalf("Newest() = %q, %v; want %q, %v", rs.Version, ok, c.wantVersion, c.wantOK)
			}
			if got := strings.Join(Names(rs.ControlPlaneOperators), ","); got != c.wantNames {
				t.Fatalf("Names = %q; want %q (the catalogue's order)", got, c.wantNames)
			}
		})
	}
}
