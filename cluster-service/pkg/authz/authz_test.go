package authz

import (
	"os"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// TestTableCoversEveryMethod keeps Table and the services Cluster Service registers in step:
// a new method must be given its callers here, and a removed one must leave.
func TestTableCoversEveryMethod(t *testing.T) {
	served := map[string]bool{}
	for _, sd := range []grpc.ServiceDesc{
		csv1.Clusters_ServiceDesc, csv1.NodePools_ServiceDesc, csv1.Versions_ServiceDesc,
		csv1.UpgradePolicies_ServiceDesc, csv1.ProvisionShards_ServiceDesc,
		csv1.Credentials_ServiceDesc, csv1.ExternalAuths_ServiceDesc, healthpb.Health_ServiceDesc,
	} {
		for _, m := range sd.Methods {
			served["/"+sd.ServiceName+"/"+m.MethodName] = true
		}
		for _, s := range sd.Streams {
			served["/"+sd.ServiceName+"/"+s.StreamName] = true
		}
	}
	for m := range served {
		if _, ok := Table[m]; !ok {
			t.Errorf("%s is served but not in Table", m)
		}
	}
	for m, who := range Table {
		if !served[m] {
			t.Errorf("Table lists %s, which is not served", m)
		}
		for _, id := range who {
			if !slices.Contains([]string{Frontend, Backend, Monitor, Maintenance, SRE}, id) {
				t.Errorf("%s: unknown identity %q", m, id)
			}
		}
	}
}

// TestMonitorOnlyLists: the Monitor reads the fleet to judge it and may call nothing else.
func TestMonitorOnlyLists(t *testing.T) {
	for m, who := range Table {
		if !slices.Contains(who, Monitor) {
			continue
		}
		name := m[strings.LastIndex(m, "/")+1:]
		if !strings.HasPrefix(name, "List") && !strings.HasPrefix(m, "/grpc.health.v1.Health/") {
			t.Errorf("the monitor may call %s, which is not a list", m)
		}
	}
}

// TestOnlySREChangesShards is the rule the issue names: provision shards are an operator's.
func TestOnlySREChangesShards(t *testing.T) {
	for _, m := range []string{csv1.ProvisionShards_RegisterShard_FullMethodName, csv1.ProvisionShards_SetShardStatus_FullMethodName} {
		if got := Table[m]; !slices.Equal(got, []string{SRE}) {
			t.Errorf("%s: %v, want only %s", m, got, SRE)
		}
	}
}

// TestDocsTableMatchesCode keeps docs/security.md's table of who may call what in step with
// Table, which is its one owner.
func TestDocsTableMatchesCode(t *testing.T) {
	b, err := os.ReadFile("../../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start, end := strings.Index(doc, "<!-- authz-table"), strings.Index(doc, "<!-- /authz-table -->")
	if start < 0 || end < start {
		t.Fatal("docs/security.md has no authz-table markers")
	}
	got := map[string][]string{}
	for _, line := range strings.Split(doc[start:end], "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 8 || !strings.Contains(cells[1], "`") {
			continue
		}
		m := strings.Trim(strings.TrimSpace(cells[1]), "`")
		if strings.HasPrefix(m, "grpc.") {
			m = "/" + m
		} else {
			m = "/openhcp.clusterservice.v1." + m
		}
		who := []string{}
		for i, id := range []string{Frontend, Backend, Monitor, Maintenance, SRE} {
			if strings.TrimSpace(cells[2+i]) != "" {
				who = append(who, id)
			}
		}
		got[m] = who
	}
	for m, want := range Table {
		w := slices.Clone(want)
		slices.Sort(w)
		g := got[m]
		slices.Sort(g)
		if _, ok := got[m]; !ok || !slices.Equal(g, w) {
			t.Errorf("docs/security.md: %s lists %v, the code %v", m, got[m], want)
		}
	}
	if len(got) != len(Table) {
		t.Errorf("docs/security.md lists %d methods, the code %d", len(got), len(Table))
	}
}

// TestCredentialKindsAreDocumented keeps docs/security.md's table of which identity is answered
// for which kind of break-glass credential equal to CredentialKinds.
func TestCredentialKindsAreDocumented(t *testing.T) {
	b, err := os.ReadFile("../../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start, end := strings.Index(doc, "<!-- credential-kinds-table"), strings.Index(doc, "<!-- /credential-kinds-table -->")
	if start < 0 || end < start {
		t.Fatal("docs/security.md has no credential-kinds-table markers")
	}
	got := map[string][]CredentialKind{}
	for _, line := range strings.Split(doc[start:end], "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 5 || !strings.Contains(cells[1], "`") {
			continue
		}
		id := strings.Trim(strings.TrimSpace(cells[1]), "`")
		got[id] = []CredentialKind{}
		for i, k := range []CredentialKind{CustomerCredentials, SRECredentials} {
			if strings.TrimSpace(cells[2+i]) != "" {
				got[id] = append(got[id], k)
			}
		}
	}
	for id, want := range CredentialKinds {
		if !slices.Equal(got[id], want) {
			t.Errorf("docs/security.md: %s is answered for %v, the code %v", id, got[id], want)
		}
	}
	if len(got) != len(CredentialKinds) {
		t.Errorf("docs/security.md lists %d identities, the code %d", len(got), len(CredentialKinds))
	}
}

// TestMaintenanceCallsOnlyWhatItUses: the maintenance service (backend/cmd/maintenance) may
// call exactly what its task types (control-plane and node-pool z-stream upgrades) and its campaigns (over clusters or node pools) call (maintenance.ClusterService),
// and the health checks; nothing else, so a compromised actuator cannot create, delete or read
// credentials.
func TestMaintenanceCallsOnlyWhatItUses(t *testing.T) {
	want := map[string]bool{
		csv1.Clusters_GetCluster_FullMethodName:                 true,
		csv1.Clusters_ListClusters_FullMethodName:               true,
		csv1.Clusters_UpdateCluster_FullMethodName:              true,
		csv1.Versions_ListVersions_FullMethodName:               true,
		csv1.UpgradePolicies_GetUpgradePolicy_FullMethodName:    true,
		csv1.NodePools_GetNodePool_FullMethodName:               true,
		csv1.NodePools_UpdateNodePool_FullMethodName:            true,
		csv1.NodePools_ListNodePools_FullMethodName:             true, // a campaign over node pools selects them
		csv1.UpgradePolicies_ListUpgradePolicies_FullMethodName: true,
		csv1.Credentials_RevokeCredentials_FullMethodName:       true, // the break-glass signer rotation: revoking hands nothing out
		csv1.Credentials_GetRevocation_FullMethodName:           true,
		"/grpc.health.v1.Health/Check":                          true,
		"/grpc.health.v1.Health/Watch":                          true,
		"/grpc.health.v1.Health/List":                           true,
	}
	for m, who := range Table {
		if got := slices.Contains(who, Maintenance); got != want[m] {
			t.Errorf("maintenance may call %s: %v, want %v", m, got, want[m])
		}
	}
}
