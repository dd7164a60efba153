package server

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/healthdoc"
)

const testSub = "00000000-0000-0000-0000-0000000000a1"

// seedCluster creates a cluster in Cluster Service and its ARM resource and operation
// documents, as the frontend would.
// corrMG1 is the correlation ID of seedCluster's operation, as ARM sends them: a GUID.
const corrMG1 = "6f1c2d3e-4a5b-4c6d-8e7f-90a1b2c3d4e5"

func seedCluster(t *testing.T, e *env) (csID, armID, opID string) {
	t.Helper()
	ctx := context.Background()
	csID = strings.Repeat("0", 31) + "7"
	armID = "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/mg1"
	_, err := e.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: &csv1.Cluster{Id: csID, ArmResourceId: armID, Spec: &csv1.ClusterSpec{
		VersionId: "4.19.17",
		Azure: &csv1.AzureSpec{Location: "eastus", SubscriptionId: testSub, ManagedResourceGroup: "mrg",
			SubnetId:               "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/s",
			NetworkSecurityGroupId: "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg"},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	lower := strings.ToLower(armID)
	opID = "op-mg1"
	now := time.Now()
	for _, d := range []struct {
		id, typ string
		body    any
	}{
		{lower, docstore.TypeResource, armdoc.ResourceDocument{ResourceID: armID, InternalID: csID, ProvisioningState: armdoc.StateProvisioning, ActiveOperationID: opID}},
		{opID, docstore.TypeOperation, armdoc.OperationDocument{ID: opID, Request: armdoc.OperationCreate, ExternalID: armID, InternalID: csID, Status: armdoc.StateProvisioning,
			StartTime: now.Add(-time.Minute), LastTransitionTime: now, CorrelationID: corrMG1}},
	} {
		b, _ := json.Marshal(d.body)
		if _, err := e.docs.Create(ctx, &docstore.Document{PartitionKey: testSub, ID: d.id, Type: d.typ, ResourceID: lower, Body: b}); err != nil {
			t.Fatal(err)
		}
	}
	return csID, armID, opID
}

func TestMustGather(t *testing.T) {
	e := start(t)
	csID, armID, _ := seedCluster(t, e)
	logs := map[string]string{
		"cluster-service.log": `{"msg":"placed","cluster":"` + csID + `"}` + "\n" + `{"msg":"other cluster","cluster":"` + strings.Repeat("1", 32) + `"}` + "\n",
		"frontend.log":        `{"msg":"PUT","path":"` + strings.ToUpper(armID) + `"}` + "\n" + `{"msg":"async","correlationRequestID":"` + corrMG1 + `"}` + "\n",
		"backend.log":         `{"msg":"nothing about it"}` + "\n",
	}
	for name, content := range logs {
		if err := os.WriteFile(filepath.Join(e.logDir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{csID, strings.TrimPrefix(armID, "/")} {
		t.Run("by_"+id[:5], func(t *testing.T) {
			code, ae, body := e.call(t, "bob", "GET", "/admin/v1/must-gather/"+id, "")
			if code != 200 {
				t.Fatalf("%d %+v", code, ae)
			}
			files := untar(t, body)
			root := "must-gather-" + csID + "/"
			for _, want := range []string{"describe.json", "arm/documents.json", "clusterservice/cluster.json", "clusterservice/nodepools.json",
				"clusterservice/externalauths.json", "clusterservice/upgradepolicies.json", "maestro/bundles.json", "audit.json", "ids.json", "README.txt"} {
				if _, ok := files[root+want]; !ok {
					t.Errorf("no %s in %v", want, keys(files))
				}
			}
			var d adminapi.ClusterDescription
			if err := json.Unmarshal(files[root+"describe.json"], &d); err != nil || d.Summary.ID != csID || d.ARM == nil || len(d.ARM.Operations) != 1 {
				t.Fatalf("describe.json: %v %+v", err, d)
			}
			var docs []docstore.Document
			if err := json.Unmarshal(files[root+"arm/documents.json"], &docs); err != nil || len(docs) != 2 {
				t.Fatalf("arm/documents.json: %v %d", err, len(docs))
			}
			if got := string(files[root+"logs/cluster-service.log"]); !strings.Contains(got, csID) || strings.Contains(got, "other cluster") {
				t.Errorf("cluster-service.log: %q", got)
			}
			if got := string(files[root+"logs/frontend.log"]); !strings.Contains(got, "PUT") || !strings.Contains(got, corrMG1) {
				t.Errorf("frontend.log (ARM ID case-insensitively, and the operation's correlation ID): %q", got)
			}
			if _, ok := files[root+"logs/backend.log"]; ok {
				t.Error("backend.log has no line about the cluster, yet is included")
			}
			if !strings.Contains(string(files[root+"README.txt"]), "Maestro") {
				t.Errorf("README.txt does not say Maestro is missing: %s", files[root+"README.txt"])
			}
		})
	}
	t.Run("unknown_cluster_is_404_naming_it", func(t *testing.T) {
		code, ae, _ := e.call(t, "bob", "GET", "/admin/v1/must-gather/"+strings.Repeat("9", 32), "")
		if code != 404 || !strings.Contains(ae.Message, strings.Repeat("9", 32)) {
			t.Fatalf("%d %+v", code, ae)
		}
	})
}

func TestDescribeAndOperations(t *testing.T) {
	e := start(t)
	csID, armID, opID := seedCluster(t, e)
	code, ae, body := e.call(t, "bob", "GET", "/admin/v1/clusters/"+strings.TrimPrefix(armID, "/"), "")
	var d adminapi.ClusterDescription
	if code != 200 || json.Unmarshal(body, &d) != nil {
		t.Fatalf("%d %+v %s", code, ae, body)
	}
	if d.Monitor != nil {
		t.Fatalf("a Monitor verdict before any Monitor wrote one: %+v", d.Monitor)
	}
	// The Monitor's health document, as a Monitor replica writes it (backend/pkg/monitor).
	checked := time.Now().UTC().Truncate(time.Second)
	hb, _ := json.Marshal(healthdoc.Cluster{ClusterID: csID, Shard: "mgmt-1", Health: "stale", Reason: "no feedback from its management cluster for 4m0s",
		Since: checked.Add(-time.Minute), CheckedAt: checked, Replica: "monitor-2", NodePools: []healthdoc.NodePool{{ID: "np1", Health: "stale", Reason: "no feedback"}}})
	if _, err := e.docs.Create(context.Background(), &docstore.Document{PartitionKey: healthdoc.Partition, ID: csID, Type: healthdoc.Type, ResourceID: csID, Body: hb}); err != nil {
		t.Fatal(err)
	}
	code, ae, body = e.call(t, "bob", "GET", "/admin/v1/clusters/"+csID, "")
	d = adminapi.ClusterDescription{}
	if code != 200 || json.Unmarshal(body, &d) != nil {
		t.Fatalf("%d %+v %s", code, ae, body)
	}
	if m := d.Monitor; m == nil || m.Health != "stale" || m.Replica != "monitor-2" || !m.CheckedAt.Equal(checked) || len(m.NodePools) != 1 || m.NodePools[0].Health != "stale" {
		t.Fatalf("describe shows Monitor verdict %+v, want the stored stale one", d.Monitor)
	}
	joined := strings.Join(d.Diagnosis, "\n")
	for _, want := range []string{"ARM: provisioningState Provisioning; operation " + opID + " (Create) Provisioning", "Cluster Service: ", "HyperShift: no HostedCluster conditions reported yet"} {
		if !strings.Contains(joined, want) {
			t.Errorf("diagnosis lacks %q:\n%s", want, joined)
		}
	}
	var ops adminapi.OperationList
	code, _, body = e.call(t, "bob", "GET", "/admin/v1/operations", "")
	if code != 200 || json.Unmarshal(body, &ops) != nil || len(ops.Operations) != 1 || ops.Operations[0].AgeSeconds < 59 ||
		!strings.HasPrefix(ops.Operations[0].WaitingOn, "Cluster Service: cluster pending") {
		t.Fatalf("operations: %d %s", code, body)
	}
	var list adminapi.ClusterList
	onShard := 0
	for _, tc := range []struct {
		q string
		n int
	}{{"?subscription=" + testSub, 1}, {"?subscription=" + testSub + "&state=ready", 0}, {"?version=4.19.17", 1}, {"?shard=mgmt-1&version=4.19.17&health=unknown", -1}, {"?shard=mgmt-2", -1},
		{"?health=unknown", 1}, {"?health=healthy", 0}} {
		code, _, body = e.call(t, "bob", "GET", "/admin/v1/clusters"+tc.q, "")
		if code != 200 || json.Unmarshal(body, &list) != nil || (tc.n >= 0 && len(list.Clusters) != tc.n) {
			t.Errorf("%s: %d %s", tc.q, code, body)
		}
		if tc.n < 0 { // the cluster is on one of the two shards
			onShard += len(list.Clusters)
		}
	}
	if onShard != 1 { // it is on mgmt-1 or mgmt-2, so exactly one of the two shard queries finds it
		t.Errorf("the two shard filters together found %d clusters, want the one seeded", onShard)
	}
	for _, q := range []string{"?state=asleep", "?subscription=abc", "?pageSize=5000", "?health=poorly", "?shard=nope"} {
		if code, ae, _ := e.call(t, "bob", "GET", "/admin/v1/clusters"+q, ""); code != 400 || ae.Target == "" {
			t.Errorf("%s: %d %+v", q, code, ae)
		}
	}
}

func untar(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	files, err := adminapi.ReadMustGather(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
