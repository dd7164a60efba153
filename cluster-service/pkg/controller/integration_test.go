package controller_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/controller"
	"github.com/openhcp/openhcp/cluster-service/pkg/maestro"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/cluster-service/pkg/placement"
	"github.com/openhcp/openhcp/cluster-service/pkg/server"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/hypershiftsim"
	"github.com/openhcp/openhcp/internal/envelope/envelopetest"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

const shard = "mgmt-1"

// region is the real stack below Cluster Service: PostgreSQL, mosquitto, the Maestro server, one
// management cluster (etcd, kube-apiserver with the HyperShift and work CRDs, and
// kube-controller-manager's namespace controller), its Maestro agent and hypershift-sim.
type region struct {
	maestro *mgmtcluster.MaestroServer
	agent   *mgmtcluster.MaestroAgent
	mgmt    *mgmtcluster.ManagementCluster
	kube    client.Client
	csDSN   string
	logDir  string
	// watchdog recovers the deletes the pinned Maestro loses, as the local region does
	// (mgmtcluster.StuckDeleteWatchdog).
	watchdog *mgmtcluster.StuckDeleteWatchdog
}

// defaultStatusSync is how often the region's agent re-reads applied objects for feedback.
const defaultStatusSync = 2 * time.Second

// startAgainstMaestro is how every test against the real Maestro begins: it is skipped under
// -short, runs within timeout (ctx), starts the region (startRegionPolling) and gives Cluster
// Service a log (log) next to the other processes' logs, dumped on failure.
func startAgainstMaestro(t *testing.T, timeout time.Duration, sim hypershiftsim.Options, statusSync time.Duration) (context.Context, *region, *slog.Logger) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts postgres, mosquitto, maestro, etcd, kube-apiserver, maestro agent and hypershift-sim")
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	ctrl.SetLogger(logr.Discard())
	r := startRegionPolling(t, ctx, sim, statusSync)
	logFile, err := os.Create(filepath.Join(r.logDir, "cluster-service.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logFile.Close() })
	return ctx, r, slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// startRegionPolling is startRegion with the agent re-reading applied objects for feedback every
// statusSync (the poll that watched feedback makes unnecessary during transitions).
func startRegionPolling(t *testing.T, ctx context.Context, sim hypershiftsim.Options, statusSync time.Duration) *region {
	t.Helper()
	maestroBin, err := mgmtcluster.MaestroBinary(ctx)
	if err != nil {
		t.Fatalf("maestro binary: %v", err)
	}
	apiserverBin, etcdBin, err := mgmtcluster.KubeBinaries(ctx)
	if err != nil {
		t.Fatalf("kube binaries: %v", err)
	}
	pg := pgservertest.Start(t)
	dir := t.TempDir()
	logDir := filepath.Join(dir, "logs")
	t.Cleanup(func() {
		if t.Failed() {
			dumpLogs(t, logDir)
		}
	})

	mq, err := mgmtcluster.StartMosquitto(ctx, mgmtcluster.MosquittoOptions{Dir: filepath.Join(dir, "mosquitto"), LogDir: logDir})
	if err != nil {
		t.Fatalf("start mosquitto: %v", err)
	}
	t.Cleanup(mq.Stop)
	ms, err := mgmtcluster.StartMaestroServer(ctx, mgmtcluster.MaestroServerOptions{Binary: maestroBin, DSN: pgservertest.NewDatabase(t, pg),
		MQTTAddr: mq.Addr, Dir: filepath.Join(dir, "maestro"), LogDir: logDir})
	if err != nil {
		t.Fatalf("start maestro server: %v", err)
	}
	t.Cleanup(ms.Stop)
	kcmBin, err := mgmtcluster.KubeControllerManagerBinary(ctx)
	if err != nil {
		t.Fatalf("kube-controller-manager binary: %v", err)
	}
	// With kube-controller-manager's namespace controller, so the work's namespace really goes
	// away when the work is deleted.
	mc, err := mgmtcluster.StartManagementCluster(ctx, mgmtcluster.ManagementClusterOptions{Name: shard, Dir: filepath.Join(dir, shard),
		LogDir: logDir, APIServerPath: apiserverBin, EtcdPath: etcdBin, ControllerManagerPath: kcmBin})
	if err != nil {
		t.Fatalf("start management cluster: %v", err)
	}
	t.Cleanup(mc.Stop)
	if err := ms.REST().RegisterConsumer(ctx, shard); err != nil {
		t.Fatalf("register consumer: %v", err)
	}
	agent, err := mgmtcluster.StartMaestroAgent(ctx, mgmtcluster.MaestroAgentOptions{Binary: maestroBin, ConsumerName: shard,
		Kubeconfig: mc.Kubeconfig, MQTTAddr: mq.Addr, Dir: filepath.Join(dir, "agent"), LogDir: logDir, StatusSyncInterval: statusSync})
	if err != nil {
		t.Fatalf("start maestro agent: %v", err)
	}
	t.Cleanup(agent.Stop)

	// hypershift-sim in this process, against the management cluster.
	scheme, err := hypershiftsim.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	// Each test of this package starts its own sim in this process: controller names repeat.
	skipNameValidation := true
	mgr, err := ctrl.NewManager(mc.RESTConfig(), ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: ctrlconfig.Controller{SkipNameValidation: &skipNameValidation}})
	if err != nil {
		t.Fatalf("hypershift-sim manager: %v", err)
	}
	if err := hypershiftsim.Setup(mgr, sim); err != nil {
		t.Fatal(err)
	}
	simCtx, stopSim := context.WithCancel(ctx)
	simDone := make(chan struct{})
	go func() { defer close(simDone); _ = mgr.Start(simCtx) }()
	t.Cleanup(func() { stopSim(); <-simDone })

	wdLog, err := os.Create(filepath.Join(logDir, "stuck-delete-watchdog.log"))
	if err != nil {
		t.Fatal(err)
	}
	wdCtx, stopWatchdog := context.WithCancel(ctx)
	t.Cleanup(stopWatchdog)
	wd := mgmtcluster.StartStuckDeleteWatchdog(wdCtx, mgmtcluster.StuckDeleteWatchdogOptions{
		Maestro: ms.REST(), BrokerAddr: mq.Addr, AgentClientIDs: map[string]string{shard: agent.ClientID},
		// This agent is kicked rarely, so it comes back within its first backoffs (5-10 s, then
		// 25-50 s); a shorter wait than the region's keeps a second kick within the tests' waits.
		StuckAfter: 30 * time.Second, Interval: 5 * time.Second, ReconnectWait: 25 * time.Second,
		Logger: slog.New(slog.NewTextHandler(wdLog, nil)), // left open: a scan may still be ending
	})
	return &region{maestro: ms, agent: agent, mgmt: mc, kube: mgr.GetClient(), csDSN: pgservertest.NewDatabase(t, pg), logDir: logDir, watchdog: wd}
}

func dumpLogs(t *testing.T, dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		t.Logf("---- %s (tail)\n%s", e.Name(), mgmtcluster.FileTail(filepath.Join(dir, e.Name()), 3000))
	}
}

// clusterService runs the store, the gRPC server on a loopback listener and the controller.
type clusterService struct {
	st       *store.Store
	clusters csv1.ClustersClient
	pools    csv1.NodePoolsClient
	works    *maestro.Client
	stopCtrl func()
}

func startClusterService(t *testing.T, ctx context.Context, r *region, log *slog.Logger) *clusterService {
	t.Helper()
	st, err := store.Open(ctx, r.csDSN, log, envelopetest.Keyring(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.RegisterShard(ctx, placement.Shard{Name: shard, MaxClusters: 10}); err != nil {
		t.Fatal(err)
	}
	mc, err := maestro.New(ctx, maestro.Config{GRPCAddr: r.maestro.GRPCAddr, RESTURL: r.maestro.RESTURL}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mc.Close() })

	srv := server.New(st, server.Config{Log: log})
	g := grpc.NewServer(srv.ServerOptions()...)
	srv.Register(g)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })

	cs := &clusterService{st: st, clusters: csv1.NewClustersClient(conn), pools: csv1.NewNodePoolsClient(conn), works: mc}
	cs.stopCtrl = runController(t, ctx, st, mc, log)
	return cs
}

func runController(t *testing.T, ctx context.Context, st *store.Store, mc controller.WorkClient, log *slog.Logger) func() {
	return runControllerWith(t, ctx, st, mc, controller.Config{}, log)
}

// runControllerWith is runController with cfg; its ResyncPeriod defaults to 20s here and its
// DeletePollPeriod is set to 1s.
func runControllerWith(t *testing.T, ctx context.Context, st *store.Store, mc controller.WorkClient, cfg controller.Config, log *slog.Logger) func() {
	cctx, cancel := context.WithCancel(ctx)
	if cfg.ResyncPeriod == 0 {
		cfg.ResyncPeriod = 20 * time.Second
	}
	cfg.DeletePollPeriod = time.Second
	c := controller.New(st, mc, cfg, log)
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(cctx) }()
	var once bool
	stop := func() {
		if !once {
			once = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return stop
}

func newCluster(n int, name string) *csv1.Cluster {
	return &csv1.Cluster{
		Id:            fmt.Sprintf("%032d", n),
		ArmResourceId: "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/" + name,
		Spec: &csv1.ClusterSpec{
			VersionId: "4.19.17",
			Azure: &csv1.AzureSpec{
				SubscriptionId: "00000000-0000-0000-0000-000000000001", ResourceGroup: "rg", Location: "eastus",
				ManagedResourceGroup:   "rg-" + name + "-managed",
				SubnetId:               "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/default",
				NetworkSecurityGroupId: "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg",
				TenantId:               "00000000-0000-0000-0000-0000000000aa",
				WorkloadIdentities: &csv1.AzureWorkloadIdentities{
					ImageRegistry: "00000000-0000-0000-0000-000000000011", Ingress: "00000000-0000-0000-0000-000000000012",
					File: "00000000-0000-0000-0000-000000000013", Disk: "00000000-0000-0000-0000-000000000014",
					NodePoolManagement: "00000000-0000-0000-0000-000000000015", CloudProvider: "00000000-0000-0000-0000-000000000016",
					Network: "00000000-0000-0000-0000-000000000017",
				},
			},
			DnsBaseDomain: "example.com",
		},
	}
}

// waitFor polls GetCluster until cond holds.
func waitFor(t *testing.T, ctx context.Context, cs *clusterService, id, what string, timeout time.Duration, cond func(*csv1.Cluster, error) bool) *csv1.Cluster {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last *csv1.Cluster
	var lastErr error
	for time.Now().Before(deadline) {
		last, lastErr = cs.clusters.GetCluster(ctx, &csv1.GetClusterRequest{Id: id})
		if cond(last, lastErr) {
			return last
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("cluster %s: not %s after %s; last %v, err %v", id, what, timeout, last, lastErr)
	return nil
}

func state(s csv1.ClusterState) func(*csv1.Cluster, error) bool {
	return func(c *csv1.Cluster, err error) bool { return err == nil && c.GetStatus().GetState() == s }
}

// TestClusterLifecycleAgainstMaestro drives clusters through the real Maestro to a real
// kube-apiserver where hypershift-sim plays HyperShift: READY, ERROR from a Degraded
// HostedCluster, a controller restart mid-install, and deletion to a DELETED event.
func TestClusterLifecycleAgainstMaestro(t *testing.T) {
	failing := newCluster(2, "failing")
	sim := hypershiftsim.Options{
		AvailableDelay: 3 * time.Second,
		DeleteDelay:    time.Second,
		FailClusters: map[types.NamespacedName]bool{
			{Namespace: manifests.Namespace("dev", failing.Id), Name: "failing"}: true,
		},
	}
	top := t
	ctx, r, log := startAgainstMaestro(t, 10*time.Minute, sim, defaultStatusSync)
	cs := startClusterService(t, ctx, r, log)

	ready := newCluster(1, "ready")
	must(t, t.Run("create_reaches_ready_from_feedback", func(t *testing.T) {
		if _, err := cs.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: ready}); err != nil {
			t.Fatal(err)
		}
		c := waitFor(t, ctx, cs, ready.Id, "READY", 3*time.Minute, state(csv1.ClusterState_CLUSTER_STATE_READY))
		st := c.GetStatus()
		if !st.GetApplied() || st.GetCurrentVersion() != "4.19.17" || st.GetApiUrl() == "" || len(st.GetConditions()) == 0 {
			t.Fatalf("status = %v", st)
		}
		// The HostedCluster really is on the management cluster, in ocm-dev-<id>.
		var hc hyperv1.HostedCluster
		if err := r.kube.Get(ctx, types.NamespacedName{Namespace: "ocm-dev-" + ready.Id, Name: "ready"}, &hc); err != nil {
			t.Fatalf("HostedCluster on the management cluster: %v", err)
		}
		if hc.Spec.Release.Image != "quay.io/openshift-release-dev/ocp-release:4.19.17-multi" || hc.Spec.Platform.Azure.Location != "eastus" {
			t.Fatalf("HostedCluster spec = %+v", hc.Spec)
		}
		var key corev1.Secret
		if err := r.kube.Get(ctx, types.NamespacedName{Namespace: "ocm-dev-" + ready.Id, Name: "ready-etcd-encryption-key"}, &key); err != nil || len(key.Data["key"]) != 32 {
			t.Fatalf("etcd key secret: %v (%d bytes)", err, len(key.Data["key"]))
		}
	}))

	must(t, t.Run("degraded_hostedcluster_is_error_with_code", func(t *testing.T) {
		if _, err := cs.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: failing}); err != nil {
			t.Fatal(err)
		}
		c := waitFor(t, ctx, cs, failing.Id, "ERROR", 3*time.Minute, state(csv1.ClusterState_CLUSTER_STATE_ERROR))
		if c.GetStatus().GetErrorCode() != controller.ErrorCodeDegraded || c.GetStatus().GetMessage() == "" {
			t.Fatalf("status = %v", c.GetStatus())
		}
	}))

	must(t, t.Run("controller_restart_mid_install_still_reaches_ready", func(t *testing.T) {
		cs.stopCtrl() // "crash": the cluster is created but nothing is sent yet
		restarted := newCluster(3, "restarted")
		if _, err := cs.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: restarted}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if c, _ := cs.clusters.GetCluster(ctx, &csv1.GetClusterRequest{Id: restarted.Id}); c.GetStatus().GetState() != csv1.ClusterState_CLUSTER_STATE_PENDING {
			t.Fatalf("with no controller the cluster is %v, want PENDING", c.GetStatus().GetState())
		}
		mc, err := maestro.New(ctx, maestro.Config{GRPCAddr: r.maestro.GRPCAddr, RESTURL: r.maestro.RESTURL}, log)
		if err != nil {
			t.Fatal(err)
		}
		// The new controller and client outlive this step: clean them up with the whole test.
		top.Cleanup(func() { _ = mc.Close() })
		cs.stopCtrl = runController(top, ctx, cs.st, mc, log)
		waitFor(t, ctx, cs, restarted.Id, "READY", 3*time.Minute, state(csv1.ClusterState_CLUSTER_STATE_READY))
		// The one that was READY before the restart stays READY (re-apply is a no-op).
		waitFor(t, ctx, cs, ready.Id, "still READY", 5*time.Second, state(csv1.ClusterState_CLUSTER_STATE_READY))
	}))

	must(t, t.Run("delete_removes_work_then_cluster_with_deleted_event", func(t *testing.T) {
		rev, err := cs.st.CurrentRevision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.clusters.DeleteCluster(ctx, &csv1.DeleteClusterRequest{Id: ready.Id}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, cs, ready.Id, "gone", 3*time.Minute, func(_ *csv1.Cluster, err error) bool { return status.Code(err) == codes.NotFound })
		var hc hyperv1.HostedCluster
		if err := r.kube.Get(ctx, types.NamespacedName{Namespace: "ocm-dev-" + ready.Id, Name: "ready"}, &hc); !apierrors.IsNotFound(err) {
			t.Fatalf("HostedCluster after delete: err %v", err)
		}
		var ns corev1.Namespace
		if err := r.kube.Get(ctx, types.NamespacedName{Name: "ocm-dev-" + ready.Id}, &ns); !apierrors.IsNotFound(err) {
			t.Fatalf("namespace after delete: phase %q, err %v", ns.Status.Phase, err)
		}
		w, err := cs.clusters.WatchClusters(ctx, &csv1.WatchClustersRequest{SinceRevision: rev})
		if err != nil {
			t.Fatal(err)
		}
		for {
			ev, err := w.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if ev.GetType() == csv1.EventType_EVENT_TYPE_BOOKMARK {
				t.Fatal("no DELETED event before the bookmark")
			}
			if ev.GetType() == csv1.EventType_EVENT_TYPE_DELETED && ev.GetCluster().GetId() == ready.Id {
				break
			}
		}
	}))
}

// must stops the test when a step failed: later steps build on earlier ones.
func must(t *testing.T, ok bool) {
	t.Helper()
	if !ok {
		t.FailNow()
	}
}
