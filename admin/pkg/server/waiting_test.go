package server

import (
	"strings"
	"testing"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// TestWaitStep: an active operation's waitingOn names the first stage of the path that is not
// done, in the order of the describe view's diagnosis.
func TestWaitStep(t *testing.T) {
	notAvailable := []*csv1.Condition{{Type: "Available", Status: "False", Reason: "WaitingForEtcd", Message: "etcd is not ready"}, {Type: "Degraded", Status: "False"}}
	available := []*csv1.Condition{{Type: "Available", Status: "True"}}
	for _, tc := range []struct {
		name string
		p    progress
		want string
	}{
		{"pending_is_placement", progress{kind: "cluster", state: "pending", message: "no shard has capacity"}, "Cluster Service: cluster pending (placement, or a ManifestWork not yet sent): no shard has capacity"},
		{"not_applied_is_maestro", progress{kind: "cluster", state: "installing", shard: "mgmt-1"}, "Maestro: ManifestWork of the cluster not applied on shard mgmt-1 yet (Cluster Service: installing)"},
		{"no_conditions_is_hypershift", progress{kind: "cluster", state: "installing", applied: true, shard: "mgmt-2"}, "HyperShift: no cluster conditions reported on shard mgmt-2 yet"},
		{"unavailable_names_the_condition", progress{kind: "cluster", state: "installing", applied: true, conds: notAvailable}, "HyperShift: Available=False (WaitingForEtcd): etcd is not ready"},
		{"node_pool_not_ready", progress{kind: "node pool", state: "updating", applied: true, conds: []*csv1.Condition{{Type: "Ready", Status: "False", Reason: "RollingOut"}}}, "HyperShift: Ready=False (RollingOut)"},
		{"available_waits_on_cluster_service", progress{kind: "cluster", state: "updating", applied: true, conds: available, message: "upgrade to 4.20.3"}, "Cluster Service: cluster updating: upgrade to 4.20.3"},
		{"uninstalling", progress{kind: "node pool", state: "uninstalling", applied: true, shard: "mgmt-1"}, "Maestro/HyperShift: node pool uninstalling on shard mgmt-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := waitStep(tc.p); !strings.HasPrefix(got, tc.want) {
				t.Fatalf("waitStep = %q, want it to start with %q", got, tc.want)
			}
		})
	}
}
