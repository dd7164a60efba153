package authz

import (
	"slices"
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
			if !slices.Contains([]string{Frontend, Backend, SRE}, id) {
				t.Errorf("%s: unknown identity %q", m, id)
			}
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
