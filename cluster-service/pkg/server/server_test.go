package server

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/cluster-service/pkg/versions"
	"github.com/openhcp/openhcp/internal/envelope/envelopetest"
	"github.com/openhcp/openhcp/internal/metricstest"
	"github.com/openhcp/openhcp/internal/pgserver"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// syncBuffer is a log sink the server's goroutines can write to while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type env struct {
	st       *store.Store
	clusters csv1.ClustersClient
	shards   csv1.ProvisionShardsClient
	pools    csv1.NodePoolsClient
	versions csv1.VersionsClient
	upgrades csv1.UpgradePoliciesClient
	creds    csv1.CredentialsClient
	eas      csv1.ExternalAuthsClient
	health   healthpb.HealthClient
	reg      *prometheus.Registry
	logs     *syncBuffer
	// conn is the clients' connection, for a test that sends what no generated client would.
	conn *grpc.ClientConn
	// dsn is the store's database, for a test that changes it underneath the store.
	dsn string
}

// start runs the real server on a loopback listener over a real database.
func start(t *testing.T) *env {
	t.Helper()
	return startOn(t, pgservertest.Start(t))
}

// startOn is start over a database of pg.
func startOn(t *testing.T, pg *pgserver.Server) *env {
	t.Helper()
	dsn := pgservertest.NewDatabase(t, pg)
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	st, err := store.Open(context.Background(), dsn, log, envelopetest.Keyring(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	reg := prometheus.NewRegistry()
	srv := New(st, Config{Log: log, Registerer: reg, KeepAlive: 200 * time.Millisecond})
	g := grpc.NewServer(srv.ServerOptions()...)
	srv.Register(g)
	healthpb.RegisterHealthServer(g, srv.Health(health.NewServer()))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(lis) //nolint:errcheck
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &env{st: st, clusters: csv1.NewClustersClient(conn), shards: csv1.NewProvisionShardsClient(conn), pools: csv1.NewNodePoolsClient(conn),
		versions: csv1.NewVersionsClient(conn), upgrades: csv1.NewUpgradePoliciesClient(conn), creds: csv1.NewCredentialsClient(conn), eas: csv1.NewExternalAuthsClient(conn), health: healthpb.NewHealthClient(conn), reg: reg, logs: logs, conn: conn, dsn: dsn}
}

func id(n int) string { return fmt.Sprintf("%032d", n) }

func arm(name string) string {
	return "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/" + name
}

func validCluster(n int, name string) *csv1.Cluster {
	return &csv1.Cluster{Id: id(n), ArmResourceId: arm(name), Spec: &csv1.ClusterSpec{
		VersionId: "4.19.17",
		Azure: &csv1.AzureSpec{Location: "eastus", SubscriptionId: "00000000-0000-0000-0000-000000000001", ManagedResourceGroup: "mrg",
			SubnetId:               "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/s",
			NetworkSecurityGroupId: "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg"},
	}}
}

func withCorrelation(ctx context.Context, cid string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, MDCorrelationRequestID, cid, MDClientRequestID, "client-"+cid, MDRequestID, "req-"+cid)
}

func (e *env) register(t *testing.T, name string, max int32) {
	t.Helper()
	if _, err := e.shards.RegisterShard(context.Background(), &csv1.RegisterShardRequest{Shard: &csv1.ProvisionShard{Name: name, MaxClusters: max}}); err != nil {
		t.Fatal(err)
	}
}

func fieldViolations(err error) map[string]bool {
	out := map[string]bool{}
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				out[v.GetField()] = true
			}
		}
	}
	return out
}

func TestClusters(t *testing.T) {
	e := start(t)
	ctx := context.Background()

	t.Run("create_without_shards_is_resource_exhausted", func(t *testing.T) {
		_, err := e.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: validCluster(1, "first")})
		if status.Code(err) != codes.ResourceExhausted || status.Convert(err).Message() != "no shard has capacity" {
			t.Fatalf("err = %v", err)
		}
	})
	e.register(t, "mc-1", 2)
	e.register(t, "mc-2", 10)

	var created *csv1.Cluster
	t.Run("create_places_and_defaults", func(t *testing.T) {
		c, err := e.clusters.CreateCluster(withCorrelation(ctx, "corr-create"), &csv1.CreateClusterRequest{Cluster: validCluster(1, "first")})
		if err != nil {
			t.Fatal(err)
		}
		created = c
		if c.GetShard() != "mc-2" || c.GetNamespace() != "ocm-dev-"+id(1) || c.GetStatus().GetState() != csv1.ClusterState_CLUSTER_STATE_PENDING {
			t.Fatalf("cluster = %v", c)
		}
		if n := c.GetSpec().GetNetwork(); n.GetPodCidr() != "10.128.0.0/14" || n.GetHostPrefix() != 23 || c.GetSpec().GetChannelGroup() != "stable" {
			t.Fatalf("defaults not applied: %v", c.GetSpec())
		}
		if c.GetRevision() <= 0 || c.GetCreateTime() == nil {
			t.Fatalf("revision %d create_time %v", c.GetRevision(), c.GetCreateTime())
		}
		// Cluster Service chooses the DNS domain and the OIDC issuer (development defaults).
		if got, want := c.GetSpec().GetDnsBaseDomain(), "ocm-dev-"+id(1)+".hypershift.local"; got != want {
			t.Fatalf("dns_base_domain = %q, want %q", got, want)
		}
		if got, want := c.GetSpec().GetIssuerUrl(), "https://oidc.hypershift.local/"+id(1); got != want {
			t.Fatalf("issuer_url = %q, want %q", got, want)
		}
	})
	t.Run("log_lines_carry_correlation_ids", func(t *testing.T) {
		var hit bool
		for _, line := range strings.Split(e.logs.String(), "\n") {
			if strings.Contains(line, `"msg":"cluster created"`) {
				hit = strings.Contains(line, `"correlationRequestID":"corr-create"`) && strings.Contains(line, `"clientRequestID":"client-corr-create"`)
			}
		}
		if !hit {
			t.Fatalf("no 'cluster created' line with correlation IDs in:\n%s", e.logs.String())
		}
	})
	t.Run("create_same_arm_resource_other_case_is_idempotent", func(t *testing.T) {
		c := validCluster(2, "FIRST")
		c.ArmResourceId = strings.ToUpper(c.ArmResourceId[:14]) + c.ArmResourceId[14:]
		got, err := e.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: c})
		if err != nil {
			t.Fatal(err)
		}
		if got.GetId() != created.GetId() || got.GetRevision() != created.GetRevision() {
			t.Fatalf("got %s rev %d, want existing %s", got.GetId(), got.GetRevision(), created.GetId())
		}
	})
	t.Run("create_same_id_other_arm_resource_is_already_exists", func(t *testing.T) {
		_, err := e.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: validCluster(1, "second")})
		if status.Code(err) != codes.AlreadyExists {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("get", func(t *testing.T) {
		got, err := e.clusters.GetCluster(ctx, &csv1.GetClusterRequest{Id: created.GetId()})
		if err != nil || got.GetArmResourceId() != arm("first") {
			t.Fatalf("GetCluster = %v, %v", got, err)
		}
		if _, err := e.clusters.GetCluster(ctx, &csv1.GetClusterRequest{Id: id(99)}); status.Code(err) != codes.NotFound {
			t.Fatalf("missing: err = %v", err)
		}
		if _, err := e.clusters.GetCluster(ctx, &csv1.GetClusterRequest{Id: "NOPE"}); status.Code(err) != codes.InvalidArgument || !fieldViolations(err)["id"] {
			t.Fatalf("bad id: err = %v", err)
		}
	})
	t.Run("list_pages_in_id_order", func(t *testing.T) {
		for n := 10; n < 15; n++ {
			if _, err := e.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: validCluster(n, fmt.Sprint("c", n))}); err != nil {
				t.Fatal(err)
			}
		}
		var ids []string
		tok := ""
		pages := 0
		for {
			resp, err := e.clusters.ListClusters(ctx, &csv1.ListClustersRequest{PageSize: 2, PageToken: tok})
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, c := range resp.GetClusters() {
				ids = append(ids, c.GetId())
			}
			if tok = resp.GetNextPageToken(); tok == "" {
				break
			}
		}
		want := []string{id(1), id(10), id(11), id(12), id(13), id(14)}
		if strings.Join(ids, ",") != strings.Join(want, ",") || pages != 3 {
			t.Fatalf("pages %d ids %v", pages, ids)
		}
		resp, err := e.clusters.ListClusters(ctx, &csv1.ListClustersRequest{ArmResourceIdPrefix: strings.ToLower(arm("c1"))})
		if err != nil || len(resp.GetClusters()) != 5 {
			t.Fatalf("prefix filter: %d, %v", len(resp.GetClusters()), err)
		}
		if _, err := e.clusters.ListClusters(ctx, &csv1.ListClustersRequest{PageToken: "garbage!"}); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("bad token: %v", err)
		}
	})
	t.Run("list_filters_by_ids", func(t *testing.T) {
		// Clusters 1 and 10-14 exist (the subtests above created them).
		tooMany := make([]string, 1001)
		for i := range tooMany {
			tooMany[i] = id(1)
		}
		for _, tc := range []struct {
			name      string
			req       *csv1.ListClustersRequest
			want      []string
			wantField string // an InvalidArgument on this field
		}{
			{name: "only_the_listed_ids_in_id_order", req: &csv1.ListClustersRequest{Ids: []string{id(13), id(1), id(11)}},
				want: []string{id(1), id(11), id(13)}},
			{name: "an_id_without_a_cluster_is_left_out", req: &csv1.ListClustersRequest{Ids: []string{id(12), id(98)}},
				want: []string{id(12)}},
			{name: "combined_with_the_prefix_by_and", req: &csv1.ListClustersRequest{Ids: []string{id(1), id(10)}, ArmResourceIdPrefix: arm("c1")},
				want: []string{id(10)}},
			{name: "no_ids_lists_everything", req: &csv1.ListClustersRequest{},
				want: []string{id(1), id(10), id(11), id(12), id(13), id(14)}},
			{name: "a_malformed_id_is_invalid", req: &csv1.ListClustersRequest{Ids: []string{id(1), "NOT-AN-ID"}}, wantField: "ids[1]"},
			{name: "more_than_1000_ids_is_invalid", req: &csv1.ListClustersRequest{Ids: tooMany}, wantField: "ids"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				resp, err := e.clusters.ListClusters(ctx, tc.req)
				if tc.wantField != "" {
					if status.Code(err) != codes.InvalidArgument || !fieldViolations(err)[tc.wantField] {
						t.Fatalf("err = %v, want InvalidArgument on %s", err, tc.wantField)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, c := range resp.GetClusters() {
					got = append(got, c.GetId())
				}
				if strings.Join(got, ",") != strings.Join(tc.want, ",") {
					t.Fatalf("ids = %v, want %v", got, tc.want)
				}
			})
		}
	})
	t.Run("placement_spreads_least_loaded", func(t *testing.T) {
		resp, err := e.shards.ListShards(ctx, &csv1.ListShardsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		counts := map[string]int32{}
		for _, sh := range resp.GetShards() {
			counts[sh.GetName()] = sh.GetClusterCount()
		}
		if counts["mc-1"]+counts["mc-2"] != 6 || counts["mc-1"] > 2 {
			t.Fatalf("counts = %v", counts)
		}
	})
	t.Run("delete_marks_uninstalling", func(t *testing.T) {
		got, err := e.clusters.DeleteCluster(ctx, &csv1.DeleteClusterRequest{Id: created.GetId()})
		if err != nil || got.GetStatus().GetState() != csv1.ClusterState_CLUSTER_STATE_UNINSTALLING {
			t.Fatalf("DeleteCluster = %v, %v", got, err)
		}
		still, err := e.clusters.GetCluster(ctx, &csv1.GetClusterRequest{Id: created.GetId()})
		if err != nil || still.GetStatus().GetState() != csv1.ClusterState_CLUSTER_STATE_UNINSTALLING {
			t.Fatalf("after delete GetCluster = %v, %v", still, err)
		}
		if _, err := e.clusters.DeleteCluster(ctx, &csv1.DeleteClusterRequest{Id: id(98)}); status.Code(err) != codes.NotFound {
			t.Fatalf("delete missing: %v", err)
		}
		_, err = e.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: validCluster(1, "first")})
		if status.Code(err) != codes.FailedPrecondition {
			t.Fatalf("create while deleting: err = %v, want FailedPrecondition", err)
		}
	})
	t.Run("metrics_by_method_and_code_and_shard", func(t *testing.T) {
		want := `
# HELP cluster_service_shard_max_clusters Capacity of the shard.
# TYPE cluster_service_shard_max_clusters gauge
cluster_service_shard_max_clusters{shard="mc-1"} 2
cluster_service_shard_max_clusters{shard="mc-2"} 10
`
		if err := testutil.GatherAndCompare(e.reg, strings.NewReader(want), "cluster_service_shard_max_clusters"); err != nil {
			t.Fatal(err)
		}
		n := metricstest.Sum(t, e.reg, "cluster_service_grpc_requests_total", "method", "/openhcp.clusterservice.v1.Clusters/CreateCluster", "code", "ResourceExhausted")
		if n != 1 {
			t.Fatalf("ResourceExhausted creates counted %v, want 1", n)
		}
		n = metricstest.Sum(t, e.reg, "cluster_service_grpc_requests_total", "method", "/openhcp.clusterservice.v1.Clusters/CreateCluster", "code", "OK")
		if n != 7 {
			t.Fatalf("OK creates counted %v, want 7", n)
		}
	})
}

func TestCreateValidation(t *testing.T) {
	e := start(t)
	e.register(t, "mc-1", 10)
	tests := []struct {
		name   string
		mutate func(c *csv1.Cluster)
		fields []string
	}{
		{"missing_cluster", nil, []string{"cluster"}},
		{"bad_id_and_arm_id", func(c *csv1.Cluster) { c.Id = "ABC"; c.ArmResourceId = "/subscriptions/x" }, []string{"cluster.id", "cluster.arm_resource_id"}},
		{"missing_spec", func(c *csv1.Cluster) { c.Spec = nil }, []string{"cluster.spec"}},
		{"bad_version", func(c *csv1.Cluster) { c.Spec.VersionId = "latest" }, []string{"cluster.spec.version_id"}},
		{"version_not_in_catalogue", func(c *csv1.Cluster) { c.Spec.VersionId = "4.12" }, []string{"cluster.spec.version_id"}},
		{"overlapping_networks", func(c *csv1.Cluster) {
			c.Spec.Network = &csv1.NetworkSpec{PodCidr: "10.0.0.0/14", MachineCidr: "10.1.0.0/16"}
		}, []string{"cluster.spec.network.machine_cidr"}},
		{"host_prefix_out_of_range", func(c *csv1.Cluster) { c.Spec.Network = &csv1.NetworkSpec{HostPrefix: 30} }, []string{"cluster.spec.network.host_prefix"}},
		{"bad_enums", func(c *csv1.Cluster) {
			c.Spec.ApiVisibility, c.Spec.ImageRegistryState, c.Spec.ChannelGroup = "Internal", "Maybe", "beta"
		}, []string{"cluster.spec.api_visibility", "cluster.spec.image_registry_state", "cluster.spec.channel_group"}},
		{"bad_azure", func(c *csv1.Cluster) {
			c.Spec.Azure = &csv1.AzureSpec{Location: "East US", SubscriptionId: "nope", SubnetId: "/x/y"}
		}, []string{"cluster.spec.azure.location", "cluster.spec.azure.subscription_id", "cluster.spec.azure.subnet_id", "cluster.spec.azure.network_security_group_id"}},
		{"missing_azure", func(c *csv1.Cluster) { c.Spec.Azure = nil }, []string{"cluster.spec.azure"}},
		{"bad_workload_identity", func(c *csv1.Cluster) {
			c.Spec.Azure.WorkloadIdentities = &csv1.AzureWorkloadIdentities{ImageRegistry: "not-a-uuid"}
		}, []string{"cluster.spec.azure.workload_identities.image_registry", "cluster.spec.azure.workload_identities.network"}},
		{"bad_key_vault_key", func(c *csv1.Cluster) { c.Spec.EtcdEncryptionKeyId = "kv/key" }, []string{"cluster.spec.etcd_encryption_key_id"}},
		{"issuer_url_from_caller", func(c *csv1.Cluster) { c.Spec.IssuerUrl = "https://evil.example.com/x" }, []string{"cluster.spec.issuer_url"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &csv1.CreateClusterRequest{}
			if tt.mutate != nil {
				req.Cluster = validCluster(1, "valid")
				tt.mutate(req.Cluster)
			}
			_, err := e.clusters.CreateCluster(context.Background(), req)
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("err = %v, want InvalidArgument", err)
			}
			got := fieldViolations(err)
			for _, f := range tt.fields {
				if !got[f] {
					t.Errorf("no violation for %s; got %v", f, got)
				}
			}
		})
	}
	resp, err := e.clusters.ListClusters(context.Background(), &csv1.ListClustersRequest{})
	if err != nil || len(resp.GetClusters()) != 0 {
		t.Fatalf("invalid creates stored %d clusters (%v)", len(resp.GetClusters()), err)
	}
}

func TestShards(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	sh, err := e.shards.RegisterShard(ctx, &csv1.RegisterShardRequest{Shard: &csv1.ProvisionShard{Name: "mc-1", MaxClusters: 1, Labels: map[string]string{"zone": "1"}}})
	if err != nil || sh.GetStatus() != csv1.ShardStatus_SHARD_STATUS_ACTIVE || sh.GetLabels()["zone"] != "1" {
		t.Fatalf("RegisterShard = %v, %v", sh, err)
	}
	if _, err := e.shards.RegisterShard(ctx, &csv1.RegisterShardRequest{Shard: &csv1.ProvisionShard{Name: "MC_1", MaxClusters: -1}}); status.Code(err) != codes.InvalidArgument ||
		!fieldViolations(err)["shard.name"] || !fieldViolations(err)["shard.max_clusters"] {
		t.Fatalf("bad shard: %v", err)
	}
	sh, err = e.shards.SetShardStatus(ctx, &csv1.SetShardStatusRequest{Name: "mc-1", Status: csv1.ShardStatus_SHARD_STATUS_MAINTENANCE})
	if err != nil || sh.GetStatus() != csv1.ShardStatus_SHARD_STATUS_MAINTENANCE {
		t.Fatalf("SetShardStatus = %v, %v", sh, err)
	}
	if _, err := e.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: validCluster(1, "alpha")}); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("create on maintenance-only region: %v", err)
	}
	if _, err := e.shards.SetShardStatus(ctx, &csv1.SetShardStatusRequest{Name: "nope", Status: csv1.ShardStatus_SHARD_STATUS_ACTIVE}); status.Code(err) != codes.NotFound {
		t.Fatalf("unknown shard: %v", err)
	}
	if _, err := e.shards.SetShardStatus(ctx, &csv1.SetShardStatusRequest{Name: "mc-1"}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("unspecified status: %v", err)
	}
}

func recv(t *testing.T, s grpc.ServerStreamingClient[csv1.ClusterEvent]) *csv1.ClusterEvent {
	t.Helper()
	type res struct {
		ev  *csv1.ClusterEvent
		err error
	}
	ch := make(chan res, 1)
	go func() { ev, err := s.Recv(); ch <- res{ev, err} }()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("Recv: %v", r.err)
		}
		return r.ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
		return nil
	}
}

// recvSkippingBookmarks returns the next non-bookmark event.
func recvSkippingBookmarks(t *testing.T, s grpc.ServerStreamingClient[csv1.ClusterEvent]) *csv1.ClusterEvent {
	for {
		if ev := recv(t, s); ev.GetType() != csv1.EventType_EVENT_TYPE_BOOKMARK {
			return ev
		}
	}
}

func TestWatchClusters(t *testing.T) {
	e := start(t)
	e.register(t, "mc-1", 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := e.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: validCluster(1, "alpha")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: validCluster(2, "bravo")})
	if err != nil {
		t.Fatal(err)
	}

	w, err := e.clusters.WatchClusters(ctx, &csv1.WatchClustersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var lastRev, newest int64
	t.Run("snapshot_then_bookmark", func(t *testing.T) {
		e1, e2, bm := recv(t, w), recv(t, w), recv(t, w)
		if e1.GetCluster().GetId() != a.GetId() || e2.GetCluster().GetId() != b.GetId() || e1.GetType() != csv1.EventType_EVENT_TYPE_UPSERTED {
			t.Fatalf("snapshot = %v, %v", e1, e2)
		}
		if bm.GetType() != csv1.EventType_EVENT_TYPE_BOOKMARK || bm.GetRevision() != b.GetRevision() {
			t.Fatalf("bookmark = %v, want revision %d", bm, b.GetRevision())
		}
		lastRev = bm.GetRevision()
	})
	t.Run("live_changes_in_revision_order", func(t *testing.T) {
		c, err := e.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: validCluster(3, "charlie")})
		if err != nil {
			t.Fatal(err)
		}
		ev := recvSkippingBookmarks(t, w)
		if ev.GetType() != csv1.EventType_EVENT_TYPE_UPSERTED || ev.GetCluster().GetId() != c.GetId() || ev.GetRevision() <= lastRev {
			t.Fatalf("event = %v (last revision %d)", ev, lastRev)
		}
		del, err := e.clusters.DeleteCluster(ctx, &csv1.DeleteClusterRequest{Id: a.GetId()})
		if err != nil {
			t.Fatal(err)
		}
		ev2 := recvSkippingBookmarks(t, w)
		if ev2.GetCluster().GetStatus().GetState() != csv1.ClusterState_CLUSTER_STATE_UNINSTALLING || ev2.GetRevision() <= ev.GetRevision() {
			t.Fatalf("delete event = %v", ev2)
		}
		// The controller removes the cluster once its work is gone; do what it does.
		if err := e.st.RemoveCluster(ctx, a.GetId(), del.GetRevision()); err != nil {
			t.Fatal(err)
		}
		ev3 := recvSkippingBookmarks(t, w)
		if ev3.GetType() != csv1.EventType_EVENT_TYPE_DELETED || ev3.GetCluster().GetId() != a.GetId() || ev3.GetRevision() <= ev2.GetRevision() {
			t.Fatalf("deleted event = %v", ev3)
		}
		newest = ev3.GetRevision()
		if _, err := e.clusters.GetCluster(ctx, &csv1.GetClusterRequest{Id: a.GetId()}); status.Code(err) != codes.NotFound {
			t.Fatalf("GetCluster after removal: %v", err)
		}
	})
	t.Run("keep_alive_bookmarks", func(t *testing.T) {
		ev := recv(t, w) // KeepAlive is 200ms in tests
		if ev.GetType() != csv1.EventType_EVENT_TYPE_BOOKMARK {
			t.Fatalf("event = %v, want a keep-alive bookmark", ev)
		}
	})
	t.Run("resume_from_revision_replays_changes_and_deletes", func(t *testing.T) {
		w2, err := e.clusters.WatchClusters(ctx, &csv1.WatchClustersRequest{SinceRevision: lastRev})
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for {
			ev := recv(t, w2)
			if ev.GetType() == csv1.EventType_EVENT_TYPE_BOOKMARK {
				break
			}
			types = append(types, ev.GetType().String()+":"+ev.GetCluster().GetId()[30:])
		}
		// c created (01→03), a deleted (tombstone replaces its UNINSTALLING event).
		want := "EVENT_TYPE_UPSERTED:03,EVENT_TYPE_DELETED:01"
		if strings.Join(types, ",") != want {
			t.Fatalf("replay = %v, want %s", types, want)
		}
	})
	t.Run("resume_from_before_compaction_is_out_of_range", func(t *testing.T) {
		if _, err := e.st.PruneTombstones(ctx, time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := resumeError(ctx, e.clusters, lastRev); status.Code(err) != codes.OutOfRange {
			t.Fatalf("err = %v, want OutOfRange", err)
		}
	})
	// The newest event, a's tombstone, was pruned just above: a client that saw it resumes at a
	// revision no event carries any more, which is still one this store issued.
	t.Run("resume_at_a_pruned_newest_tombstone_is_accepted", func(t *testing.T) {
		if cur, err := e.st.CurrentRevision(ctx); err != nil || cur >= newest {
			t.Fatalf("current revision %d (%v): want it below the pruned tombstone's %d", cur, err, newest)
		}
		w5, err := e.clusters.WatchClusters(ctx, &csv1.WatchClustersRequest{SinceRevision: newest})
		if err != nil {
			t.Fatal(err)
		}
		ev, err := w5.Recv()
		if err != nil || ev.GetType() != csv1.EventType_EVENT_TYPE_BOOKMARK || ev.GetRevision() != newest {
			t.Fatalf("first message = %v, %v; want a BOOKMARK at %d", ev, err, newest)
		}
	})
	// A database restored from a backup, or a promoted replica, issues revisions from a lower
	// point: a client's resume point beyond every revision this store issued is refused, so that
	// it gathers a snapshot again instead of staying on what it saw before.
	t.Run("resume_beyond_the_newest_revision_is_out_of_range", func(t *testing.T) {
		if err := resumeError(ctx, e.clusters, newest+1000); status.Code(err) != codes.OutOfRange {
			t.Fatalf("err = %v, want OutOfRange", err)
		}
	})
	t.Run("negative_revision_is_invalid", func(t *testing.T) {
		if err := resumeError(ctx, e.clusters, -1); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("err = %v, want InvalidArgument", err)
		}
	})
}

// resumeError opens a watch from since and reads it up to its first BOOKMARK: the error that
// refused or ended it there (nil once the BOOKMARK arrived).
func resumeError(ctx context.Context, clusters csv1.ClustersClient, since int64) error {
	w, err := clusters.WatchClusters(ctx, &csv1.WatchClustersRequest{SinceRevision: since})
	if err != nil {
		return err
	}
	for {
		ev, err := w.Recv()
		if err != nil || ev.GetType() == csv1.EventType_EVENT_TYPE_BOOKMARK {
			return err
		}
	}
}

// A database restored from a backup under a running Cluster Service: its revisions restart below
// what a live watch already sent, and the watch ends with OutOfRange at its next keep-alive, so
// that the client gathers a snapshot again instead of staying on what it saw.
func TestAWatchWhoseStoreWentBackwardsEnds(t *testing.T) {
	e := start(t)
	e.register(t, "mc-1", 10)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	first, err := e.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: validCluster(1, "alpha")})
	if err != nil {
		t.Fatal(err)
	}
	for n := 2; n <= 3; n++ {
		if _, err := e.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: validCluster(n, fmt.Sprintf("c%d", n))}); err != nil {
			t.Fatal(err)
		}
	}
	w, err := e.clusters.WatchClusters(ctx, &csv1.WatchClustersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for ev := recv(t, w); ev.GetType() != csv1.EventType_EVENT_TYPE_BOOKMARK; ev = recv(t, w) {
	}
	// What a restore of a backup taken after the first create leaves: its event, its revision.
	conn, err := pgx.Connect(ctx, e.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DELETE FROM cluster_events WHERE revision > $1`, first.GetRevision()); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT setval('cluster_revision_seq', $1)`, first.GetRevision()); err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := w.Recv()
		if status.Code(err) == codes.OutOfRange {
			return
		}
		if err != nil {
			t.Fatalf("the watch ended with %v, want OutOfRange", err)
		}
		if ev.GetType() != csv1.EventType_EVENT_TYPE_BOOKMARK {
			t.Fatalf("event %v after the restore", ev)
		}
	}
}

func TestCreateResolvesMinorVersionAndAcceptsShortNames(t *testing.T) {
	e := start(t)
	e.register(t, "mc-1", 10)
	c := validCluster(77, "a")
	c.Spec.VersionId = "4.19"
	got, err := e.clusters.CreateCluster(context.Background(), &csv1.CreateClusterRequest{Cluster: c})
	if err != nil {
		t.Fatalf("create %s with version 4.19: %v", c.ArmResourceId, err)
	}
	catalogue, err := versions.Default()
	if err != nil {
		t.Fatal(err)
	}
	want, err := catalogue.Resolve("stable", "4.19", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got.GetSpec().GetVersionId() != want {
		t.Fatalf("stored version %q, want the catalogue's newest 4.19 patch %q", got.GetSpec().GetVersionId(), want)
	}
}
