package monitor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/server/servertest"
	csstore "github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
	"github.com/openhcp/openhcp/internal/healthdoc"
	"github.com/openhcp/openhcp/internal/pgserver"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// fleet is a real Cluster Service (its gRPC server on its PostgreSQL store) with one shard.
type fleet struct {
	t     *testing.T
	db    *csstore.Store
	cs    csv1.ClustersClient
	np    csv1.NodePoolsClient
	sh    csv1.ProvisionShardsClient
	sub   string
	shard string
	pg    *pgserver.Server
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	ctx := context.Background()
	pg := pgservertest.Start(t)
	cs := servertest.Start(t, pg)
	db, conn := cs.Store, cs.Conn
	f := &fleet{t: t, db: db, cs: csv1.NewClustersClient(conn), np: csv1.NewNodePoolsClient(conn), sh: csv1.NewProvisionShardsClient(conn), sub: uuid.NewString(), shard: "mgmt-1", pg: pg}
	if _, err := f.sh.RegisterShard(ctx, &csv1.RegisterShardRequest{Shard: &csv1.ProvisionShard{Name: f.shard, Status: csv1.ShardStatus_SHARD_STATUS_ACTIVE, MaxClusters: 8}}); err != nil {
		t.Fatalf("register shard: %v", err)
	}
	return f
}

func (f *fleet) createCluster(name string) string {
	f.t.Helper()
	id := strings.ReplaceAll(uuid.NewString(), "-", "")
	rid := "/subscriptions/" + f.sub + "/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/" + name
	if _, err := f.cs.CreateCluster(context.Background(), &csv1.CreateClusterRequest{Cluster: &csv1.Cluster{
		Id: id, ArmResourceId: rid,
		Spec: &csv1.ClusterSpec{VersionId: "4.19.17", ChannelGroup: "stable", Azure: &csv1.AzureSpec{
			SubscriptionId: f.sub, ResourceGroup: "rg", Location: "westus3",
			SubnetId:               "/subscriptions/" + f.sub + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/workers",
			NetworkSecurityGroupId: "/subscriptions/" + f.sub + "/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg",
		}},
	}}); err != nil {
		f.t.Fatalf("create cluster: %v", err)
	}
	return id
}

// feedback stores a cluster status as Cluster Service's controller does from Maestro.
func (f *fleet) feedback(id string, st *csv1.ClusterStatus) {
	f.t.Helper()
	ctx := context.Background()
	for range 10 {
		c, err := f.db.GetCluster(ctx, id)
		if err != nil {
			f.t.Fatal(err)
		}
		if _, err = f.db.UpdateStatus(ctx, id, c.Revision, st); err == nil {
			return
		} else if !errors.Is(err, csstore.ErrConflict) {
			f.t.Fatal(err)
		}
	}
	f.t.Fatal("status update kept conflicting")
}

type ownAll struct{}

func (ownAll) Owns(string) bool { return true }

type ownOnly map[string]bool

func (o ownOnly) Owns(name string) bool { return o[name] }

// gauge reads one series of a gathered metric, with labels as "k=v" pairs; -1 when absent.
func gauge(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for _, kv := range labels {
				k, v, _ := strings.Cut(kv, "=")
				if have[k] != v {
					continue series
				}
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	return -1
}

func TestChecker(t *testing.T) {
	f := newFleet(t)
	ctx := context.Background()
	ready := f.createCluster("ready")
	f.feedback(ready, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY, Conditions: []*csv1.Condition{{Type: "Available", Status: "True"}}})
	failed := f.createCluster("failed")
	f.feedback(failed, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_ERROR, ErrorCode: "InvalidReleaseImage"})
	installing := f.createCluster("installing")
	f.feedback(installing, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_INSTALLING})
	if _, err := f.np.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: &csv1.NodePool{Id: strings.ReplaceAll(uuid.NewString(), "-", ""), ClusterId: ready,
		ArmResourceId: "/subscriptions/" + f.sub + "/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/ready/nodePools/np1",
		Spec:          &csv1.NodePoolSpec{Replicas: 2, VersionId: "4.19.17", Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3"}}}}); err != nil {
		t.Fatalf("create node pool: %v", err)
	}

	// The shard's /readyz: a real HTTP server on loopback whose answer the test switches.
	var down atomic.Bool
	readyz := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if down.Load() {
			http.Error(w, "etcd failed", http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(readyz.Close)
	probes := map[string]Probe{f.shard: ReadyzProbe(readyz.Client(), readyz.URL+"/readyz")}

	now := time.Now()
	clock := func() time.Time { return now }
	newChecker := func(owner Owner) (*Checker, *prometheus.Registry) {
		reg := prometheus.NewRegistry()
		m := NewMetrics(reg, func() int { return 0 }, 8)
		return NewChecker(CheckerConfig{Clusters: f.cs, NodePools: f.np, Shards: f.sh, Probes: probes, Owner: owner, Metrics: m, Now: clock}), reg
	}

	t.Run("verdicts_follow_what_cluster_service_observed", func(t *testing.T) {
		c, reg := newChecker(ownAll{})
		if err := c.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		for id, want := range map[string]Health{ready: Healthy, failed: Unhealthy, installing: Progressing} {
			r, ok := c.Report(id)
			if !ok || r.Verdict.Health != want {
				t.Errorf("cluster %s: report %+v, want %s", id, r, want)
			}
			if v := gauge(t, reg, "monitor_cluster_info", "cluster_id="+id, "health="+string(want)); v != 1 {
				t.Errorf("monitor_cluster_info{cluster_id=%s,health=%s} = %v, want 1", id, want, v)
			}
		}
		for h, want := range map[Health]float64{Healthy: 1, Unhealthy: 1, Progressing: 1} {
			if v := gauge(t, reg, "monitor_clusters", "shard="+f.shard, "health="+string(h)); v != want {
				t.Errorf("monitor_clusters{health=%s} = %v, want %v", h, v, want)
			}
		}
		// The new node pool waits for its cluster's manifests: pending, within its SLO.
		if v := gauge(t, reg, "monitor_node_pools", "shard="+f.shard, "health=progressing"); v != 1 {
			t.Errorf("monitor_node_pools{health=progressing} = %v, want 1", v)
		}
		if r, _ := c.Report(ready); len(r.NodePools) != 1 {
			t.Errorf("report of %s has node pools %+v, want one", ready, r.NodePools)
		}
		if v := gauge(t, reg, "monitor_shard_clusters", "shard="+f.shard); v != 3 {
			t.Errorf("monitor_shard_clusters = %v, want 3", v)
		}
		if v := gauge(t, reg, "monitor_shard_max_clusters", "shard="+f.shard); v != 8 {
			t.Errorf("monitor_shard_max_clusters = %v, want 8", v)
		}
		if v := gauge(t, reg, "monitor_shard_feedback_age_seconds", "shard="+f.shard); v != 0 {
			t.Errorf("monitor_shard_feedback_age_seconds = %v while /readyz answers, want 0", v)
		}
	})

	t.Run("a_change_without_progress_past_its_slo_becomes_stuck", func(t *testing.T) {
		c, reg := newChecker(ownAll{})
		now = time.Now().Add(2 * time.Hour)
		t.Cleanup(func() { now = time.Now() })
		if err := c.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if r, _ := c.Report(installing); r.Verdict.Health != Stuck {
			t.Fatalf("installing cluster two hours on: %+v, want stuck", r.Verdict)
		}
		if v := gauge(t, reg, "monitor_clusters", "shard="+f.shard, "health=stuck"); v != 1 {
			t.Errorf("monitor_clusters{health=stuck} = %v, want 1", v)
		}
	})

	t.Run("a_settled_cluster_whose_own_feedback_is_too_old_is_stale", func(t *testing.T) {
		c, reg := newChecker(ownAll{})
		now = time.Now().Add(2 * time.Hour)
		t.Cleanup(func() { now = time.Now() })
		if err := c.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		// No feedback_time recorded (a Cluster Service without the heartbeat, or before its
		// first answer): not judged on feedback, whatever the status's age.
		if r, _ := c.Report(ready); r.Verdict.Health != Healthy {
			t.Fatalf("ready cluster two hours on without a recorded feedback: %+v, want healthy", r.Verdict)
		}
		// Feedback recorded two hours ago makes it stale.
		f.feedback(ready, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY, Conditions: []*csv1.Condition{{Type: "Available", Status: "True"}},
			FeedbackTime: timestamppb.New(now.Add(-2 * time.Hour)), FeedbackGeneration: 1})
		// A failed cluster is not judged on feedback, even an old one: Cluster Service sets
		// ERROR itself when it cannot build a cluster's work, and then nothing answers.
		f.feedback(failed, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_ERROR, ErrorCode: "InvalidReleaseImage",
			FeedbackTime: timestamppb.New(now.Add(-2 * time.Hour)), FeedbackGeneration: 1})
		if err := c.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if r, _ := c.Report(ready); r.Verdict.Health != Stale || !strings.HasPrefix(r.Verdict.Reason, ReasonFeedbackStale+": last feedback 2h") {
			t.Fatalf("ready cluster whose last feedback was two hours ago: %+v, want stale (%s)", r.Verdict, ReasonFeedbackStale)
		}
		if r, _ := c.Report(failed); r.Verdict.Health != Unhealthy {
			t.Fatalf("failed cluster with old feedback: %+v, want unhealthy", r.Verdict)
		}
		if v := gauge(t, reg, "monitor_clusters", "shard="+f.shard, "health=stale"); v != 1 {
			t.Errorf("monitor_clusters{health=stale} = %v, want 1", v)
		}
		// A heartbeat's answer a minute ago, as Cluster Service stores it, makes it fresh again.
		f.feedback(ready, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY, Conditions: []*csv1.Condition{{Type: "Available", Status: "True"}},
			FeedbackTime: timestamppb.New(now.Add(-time.Minute)), FeedbackGeneration: 2})
		if err := c.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if r, _ := c.Report(ready); r.Verdict.Health != Healthy {
			t.Fatalf("ready cluster with feedback a minute ago: %+v, want healthy", r.Verdict)
		}
		if v := gauge(t, reg, "monitor_clusters", "shard="+f.shard, "health=stale"); v > 0 {
			t.Errorf("monitor_clusters{health=stale} = %v, want none", v)
		}
	})

	t.Run("a_shard_whose_readyz_fails_past_the_limit_makes_its_clusters_stale", func(t *testing.T) {
		c, reg := newChecker(ownAll{})
		now = time.Now()
		if err := c.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		down.Store(true)
		t.Cleanup(func() { down.Store(false); now = time.Now() })
		now = now.Add(time.Minute)
		if err := c.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if r, _ := c.Report(ready); r.Verdict.Health != Healthy {
			t.Fatalf("a minute without feedback: %+v, want still healthy", r.Verdict)
		}
		now = now.Add(5 * time.Minute)
		if err := c.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if r, _ := c.Report(ready); r.Verdict.Health != Stale {
			t.Fatalf("six minutes without feedback: %+v, want stale", r.Verdict)
		}
		if v := gauge(t, reg, "monitor_shard_feedback_age_seconds", "shard="+f.shard); v != 360 {
			t.Errorf("monitor_shard_feedback_age_seconds = %v, want 360", v)
		}
		if v := gauge(t, reg, "monitor_checks_failed_total", "check=shard_readyz"); v != 2 {
			t.Errorf("monitor_checks_failed_total{check=shard_readyz} = %v, want 2", v)
		}
		if v := gauge(t, reg, "monitor_clusters", "shard="+f.shard, "health=stale"); v != 3 {
			t.Errorf("monitor_clusters{health=stale} = %v, want 3", v)
		}
	})

	t.Run("a_replica_exports_only_what_it_owns", func(t *testing.T) {
		c, reg := newChecker(ownOnly{ready: true})
		if err := c.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if _, ok := c.Report(failed); ok {
			t.Fatal("reported a cluster it does not own")
		}
		if v := gauge(t, reg, "monitor_cluster_info", "cluster_id="+failed); v != -1 {
			t.Fatalf("monitor_cluster_info for an unowned cluster = %v, want no series", v)
		}
		if v := gauge(t, reg, "monitor_shard_clusters", "shard="+f.shard); v != -1 {
			t.Fatalf("monitor_shard_clusters of an unowned shard = %v, want no series", v)
		}
		if v := gauge(t, reg, "monitor_clusters", "shard="+f.shard, "health=healthy"); v != 1 {
			t.Fatalf("monitor_clusters{health=healthy} = %v, want 1", v)
		}
	})

	t.Run("the_verdict_is_stored_for_the_admin_api_and_rewritten_when_it_changes", func(t *testing.T) {
		docs, err := postgres.Open(ctx, pgservertest.NewDatabase(t, f.pg), postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(docs.Close)
		now = time.Now()
		t.Cleanup(func() { now = time.Now() })
		c := NewChecker(CheckerConfig{Clusters: f.cs, NodePools: f.np, Shards: f.sh, Probes: probes, Owner: ownAll{}, Now: clock, Reports: docs, Replica: "r1"})
		if err := c.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		h, err := healthdoc.Get(ctx, docs, installing)
		if err != nil || h == nil {
			t.Fatalf("health of %s: %v, %v", installing, h, err)
		}
		if h.Health != string(Progressing) || h.Replica != "r1" || h.Shard != f.shard {
			t.Fatalf("stored health %+v, want progressing on %s by r1", h, f.shard)
		}
		if r, err := healthdoc.Get(ctx, docs, ready); err != nil || r == nil || len(r.NodePools) != 1 {
			t.Fatalf("health of %s: %+v, %v; want one node pool", ready, r, err)
		}
		first := h.Since
		now = now.Add(2 * time.Hour)
		if err := c.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		h, _ = healthdoc.Get(ctx, docs, installing)
		if h.Health != string(Stuck) || !h.Since.After(first) {
			t.Fatalf("after two hours: %+v, want stuck since the later pass", h)
		}
		// A second replica taking the cluster over keeps the stored Since of an unchanged verdict.
		c2 := NewChecker(CheckerConfig{Clusters: f.cs, NodePools: f.np, Shards: f.sh, Probes: probes, Owner: ownAll{}, Now: clock, Reports: docs, Replica: "r2"})
		stuckSince := h.Since
		now = now.Add(10 * time.Minute)
		if err := c2.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		h, _ = healthdoc.Get(ctx, docs, installing)
		if h.Replica != "r2" || !h.Since.Equal(stuckSince) {
			t.Fatalf("after takeover: %+v, want written by r2 with since %s", h, stuckSince)
		}
		if none, err := healthdoc.Get(ctx, docs, "no-such-cluster"); none != nil || err != nil {
			t.Fatalf("health of an unknown cluster: %v, %v; want none", none, err)
		}
	})
}

// TestCheckerHostedAPIServer: an installed cluster whose hosted kube-apiserver (status.api_url)
// does not answer is unhealthy, whatever its conditions say, also once Cluster Service reports
// it INSTALLING again; one whose endpoint HyperShift reports as not served is not probed, nor
// is a cluster in its first install.
func TestCheckerHostedAPIServer(t *testing.T) {
	f := newFleet(t)
	ctx := context.Background()
	alive := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusUnauthorized) // --anonymous-auth=false
	}))
	t.Cleanup(alive.Close)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "https://" + l.Addr().String()
	_ = l.Close()
	available := []*csv1.Condition{{Type: "Available", Status: "True"}}
	ready := func(url string, extra ...*csv1.Condition) *csv1.ClusterStatus {
		return &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY, ApiUrl: url, Conditions: append(append([]*csv1.Condition{}, available...), extra...)}
	}
	served := f.createCluster("served")
	f.feedback(served, ready(alive.URL))
	down := f.createCluster("down")
	f.feedback(down, ready(deadURL))
	capped := f.createCluster("capped")
	f.feedback(capped, ready(deadURL, &csv1.Condition{Type: "HostedAPIServer", Status: "False", Reason: "CapReached"}))
	installing := f.createCluster("installing")
	f.feedback(installing, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_INSTALLING, ApiUrl: deadURL})
	// Installed once (a Completed version), then its control plane stopped: HyperShift's
	// Available went False, so Cluster Service says INSTALLING again.
	lost := f.createCluster("lost")
	f.feedback(lost, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_INSTALLING, ApiUrl: deadURL, CurrentVersion: "4.19.17",
		Conditions: []*csv1.Condition{{Type: "Available", Status: "False", Reason: "KubeAPIServerNotReady"}}})

	reg := prometheus.NewRegistry()
	c := NewChecker(CheckerConfig{Clusters: f.cs, NodePools: f.np, Shards: f.sh, Owner: ownAll{},
		Metrics: NewMetrics(reg, func() int { return 0 }, 8), HostedProbe: NewHostedAPIServerProbe()})
	if err := c.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]Health{served: Healthy, down: Unhealthy, capped: Healthy, installing: Progressing, lost: Unhealthy} {
		if r, _ := c.Report(id); r.Verdict.Health != want {
			t.Errorf("cluster %s: %+v, want %s", id, r.Verdict, want)
		}
	}
	if r, _ := c.Report(down); !strings.HasPrefix(r.Verdict.Reason, ReasonHostedAPIServerUnreachable) {
		t.Errorf("reason %q, want %s…", r.Verdict.Reason, ReasonHostedAPIServerUnreachable)
	}
	for result, want := range map[string]float64{"up": 1, "down": 2} {
		if v := gauge(t, reg, "monitor_hosted_apiservers", "shard="+f.shard, "result="+result); v != want {
			t.Errorf("monitor_hosted_apiservers{result=%s} = %v, want %v", result, v, want)
		}
	}
	if v := gauge(t, reg, "monitor_checks_failed_total", "check=hosted_apiserver"); v != 2 {
		t.Errorf("monitor_checks_failed_total{check=hosted_apiserver} = %v, want 2", v)
	}
}

// TestCheckerSweepsHealthOfDeletedClusters: the replica that owns a cluster's bucket removes
// its health document once Cluster Service no longer lists the cluster; a document in a bucket
// it does not own is left to that bucket's owner, and a live cluster's stays.
func TestCheckerSweepsHealthOfDeletedClusters(t *testing.T) {
	f := newFleet(t)
	ctx := context.Background()
	docs, err := postgres.Open(ctx, pgservertest.NewDatabase(t, f.pg), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(docs.Close)
	live := f.createCluster("live")
	gone := f.createCluster("gone")
	elsewhere := f.createCluster("elsewhere")
	now := time.Now()
	clock := func() time.Time { return now }
	all := NewChecker(CheckerConfig{Clusters: f.cs, NodePools: f.np, Shards: f.sh, Owner: ownAll{}, Now: clock, Reports: docs, Replica: "r1"})
	if err := all.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{live, gone, elsewhere} {
		if h, err := healthdoc.Get(ctx, docs, id); err != nil || h == nil {
			t.Fatalf("health of %s after the first pass: %v, %v", id, h, err)
		}
	}
	for _, id := range []string{gone, elsewhere} {
		c, err := f.db.MarkDeleting(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.db.RemoveCluster(ctx, id, c.Revision); err != nil {
			t.Fatalf("remove cluster %s: %v", id, err)
		}
	}
	// A pass at once leaves every document: one written lately may be the bucket's previous
	// holder's, from a list newer than this replica's.
	early := NewChecker(CheckerConfig{Clusters: f.cs, NodePools: f.np, Shards: f.sh, Owner: ownOnly{live: true, gone: true}, Now: clock, Reports: docs, Replica: "r2"})
	if err := early.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if h, err := healthdoc.Get(ctx, docs, gone); err != nil || h == nil {
		t.Fatalf("health of %s, deleted a moment after it was written: %v, %v; want it kept until it is old", gone, h, err)
	}
	// A later pass by a replica that owns live's and gone's buckets, not elsewhere's.
	now = now.Add(sweepEvery + time.Second)
	own := NewChecker(CheckerConfig{Clusters: f.cs, NodePools: f.np, Shards: f.sh, Owner: ownOnly{live: true, gone: true}, Now: clock, Reports: docs, Replica: "r2"})
	if err := own.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if h, err := healthdoc.Get(ctx, docs, gone); err != nil || h != nil {
		t.Errorf("health of the deleted cluster %s: %+v, %v; want none", gone, h, err)
	}
	if h, err := healthdoc.Get(ctx, docs, elsewhere); err != nil || h == nil {
		t.Errorf("health of %s, deleted but in a bucket r2 does not own: %v, %v; want it left", elsewhere, h, err)
	}
	if h, err := healthdoc.Get(ctx, docs, live); err != nil || h == nil {
		t.Errorf("health of the live cluster %s: %v, %v; want it kept", live, h, err)
	}
}

// TestCheckerProbesHostedAPIServersAtOnce: hung hosted kube-apiservers do not add up. The
// probes of one pass run side by side, so a pass over many clusters whose endpoints hang takes
// about one probe timeout, not one per cluster. The probe here answers only once every
// cluster's probe is in flight at the same time; probes run one after another would each wait
// out their timeout instead and fail.
func TestCheckerProbesHostedAPIServersAtOnce(t *testing.T) {
	f := newFleet(t)
	ctx := context.Background()
	const n = 3
	var ids []string
	for i := range n {
		id := f.createCluster(fmt.Sprintf("hung%d", i))
		f.feedback(id, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY, ApiUrl: fmt.Sprintf("https://hung%d.invalid:6443", i),
			Conditions: []*csv1.Condition{{Type: "Available", Status: "True"}}})
		ids = append(ids, id)
	}
	var mu sync.Mutex
	inFlight := 0
	all := make(chan struct{})
	probe := func(ctx context.Context, _ string) error {
		mu.Lock()
		if inFlight++; inFlight == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("hung: %w", ctx.Err())
		}
	}
	c := NewChecker(CheckerConfig{Clusters: f.cs, NodePools: f.np, Shards: f.sh, Owner: ownAll{}, ProbeTimeout: 15 * time.Second,
		Metrics: NewMetrics(prometheus.NewRegistry(), func() int { return 0 }, 8), HostedProbe: probe})
	if err := c.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if r, _ := c.Report(id); r.Verdict.Health != Healthy {
			t.Errorf("cluster %s: %+v, want healthy (its probe was not run beside the others)", id, r.Verdict)
		}
	}
}
