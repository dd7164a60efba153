package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/admin/pkg/mgmtclusters"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// TestSickShardIsShown: with one management cluster whose apiserver is not ready, the shard
// list says which and why, a describe of a cluster on it ends with that, and its must-gather
// still answers, saying why management/ is missing. (The healthy path against real
// management clusters is TestHcpctl's, e2e.)
func TestSickShardIsShown(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	clusterID, _, _ := seedCluster(t, e)
	c, err := e.clusters.GetCluster(ctx, &csv1.GetClusterRequest{Id: clusterID})
	if err != nil || c.GetShard() == "" {
		t.Fatalf("seeded cluster: %v %v", c, err)
	}
	sick := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, "[-]etcd failed: reason withheld")
	}))
	defer sick.Close()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, sick.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	mc, err := mgmtclusters.New(map[string]string{c.GetShard(): kc})
	if err != nil {
		t.Fatal(err)
	}
	e.srv.cfg.ManagementClusters = mc

	var shards adminapi.ShardList
	code, _, body := e.call(t, "bob", "GET", "/admin/v1/shards", "")
	if code != 200 || json.Unmarshal(body, &shards) != nil {
		t.Fatalf("%d %s", code, body)
	}
	for _, sh := range shards.Shards {
		want := mgmtclusters.Unknown // no kubeconfig for the other shard
		if sh.Name == c.GetShard() {
			want = mgmtclusters.Unhealthy
		}
		if sh.Health != want || (want == mgmtclusters.Unhealthy && !strings.Contains(sh.HealthMessage, "answered 500: [-]etcd failed")) {
			t.Errorf("shard %s: health %s %q, want %s", sh.Name, sh.Health, sh.HealthMessage, want)
		}
	}

	var d adminapi.ClusterDescription
	code, _, body = e.call(t, "bob", "GET", "/admin/v1/clusters/"+clusterID, "")
	if code != 200 || json.Unmarshal(body, &d) != nil || len(d.Diagnosis) == 0 ||
		!strings.HasPrefix(d.Diagnosis[len(d.Diagnosis)-1], "Management cluster "+c.GetShard()+": unhealthy (") {
		t.Fatalf("describe: %d %v", code, d.Diagnosis)
	}

	code, _, body = e.call(t, "bob", "GET", "/admin/v1/must-gather/"+clusterID, "")
	if code != 200 {
		t.Fatalf("must-gather: %d %.300s", code, body)
	}
	files := untar(t, body)
	readme := string(files["must-gather-"+clusterID+"/README.txt"])
	if !strings.Contains(readme, "management/: list HostedClusters of "+clusterID+" on "+c.GetShard()) {
		t.Fatalf("README does not say why management/ is missing:\n%s", readme)
	}
	if _, ok := files["must-gather-"+clusterID+"/management/hostedclusters.json"]; ok {
		t.Fatal("management/hostedclusters.json present although the shard could not be read")
	}
}
