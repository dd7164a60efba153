package monitor

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/placement"
	"github.com/openhcp/openhcp/cluster-service/pkg/server/servertest"
	csstore "github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
	"github.com/openhcp/openhcp/internal/pgserver"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// benchClusters is the fleet BenchmarkMonitorPass checks: 1,000 hosted clusters, each with one
// node pool, spread over benchShards shards.
const (
	benchClusters = 1000
	benchShards   = 3
)

// BenchmarkMonitorPass measures one Monitor pass (Checker.Pass) over 1,000 hosted clusters with
// the real parts: Cluster Service's gRPC server in this process on its PostgreSQL store, the
// Checker reading it through gRPC (ListShards, ListClusters in pages of 500, one ListNodePools per
// cluster), a real Sharer holding every bucket through lease documents, and health documents in
// the real document store (PostgreSQL). The clusters are inserted straight into Cluster Service's
// store with their status (simulated clusters): 970 READY with an Available condition and a
// feedback_time a minute old (5 of them also Degraded=True), 20 INSTALLING, 10 ERROR; every
// node pool READY. LeastLoaded placement spreads them over the 3 shards.
//
// Probes: each shard's /readyz probe is the real ReadyzProbe against one local HTTP test
// server answering 200. The hosted kube-apiserver probes are off (HostedProbe nil), as
// --probe-hosted-apiservers=false: one TLS handshake per ready cluster would measure the test
// server's TLS as much as the Monitor (docs/perf-data/hostedapi-* measures hosted kube-apiservers).
//
// Sub-benchmarks, as the Checker's cost differs:
//   - first: a new Checker on an empty health partition (a replica's first pass, or a new
//     bucket's): one read and one create per cluster's health document, and a sweep query.
//   - steady: later passes within rewriteAfter with no verdict changed: no document write.
//   - rewrite: a pass rewriteAfter or more after the last (every 5 minutes): every document
//     replaced, and a sweep. The clock is moved 6 minutes per pass; feedback staleness is
//     pushed out so the verdicts stay the same.
//
// Per pass it reports wall time (ms/pass), CPU of this process (Monitor and Cluster Service
// server, getrusage user+sys: cpu-ms/pass, cpu-us/cluster), CPU of PostgreSQL's processes
// (/proc, pg-cpu-ms/pass) and both per cluster (all-cpu-us/cluster), each measured around Pass
// alone. MONITOR_PASS_PROFILE=<file> writes a CPU profile of the steady passes (this process).
// The Sharer's renewals in the background fall inside those windows too, as in a
// running Monitor.
func BenchmarkMonitorPass(b *testing.B) {
	ctx := context.Background()
	pg := pgservertest.Start(b)
	cs := servertest.Start(b, pg)
	seedFleet(b, cs.Store)

	readyz := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	b.Cleanup(readyz.Close)
	probes := map[string]Probe{}
	for i := range benchShards {
		probes[benchShardName(i)] = ReadyzProbe(readyz.Client(), readyz.URL+"/readyz")
	}

	// The leases live in a document store of their own, as the health documents' store is
	// renewed per sub-benchmark iteration below.
	leases, err := postgres.Open(ctx, pgservertest.NewDatabase(b, pg), postgres.Options{})
	if err != nil {
		b.Fatalf("open lease store: %v", err)
	}
	b.Cleanup(leases.Close)
	sharer, err := NewSharer(leases, ShareConfig{Holder: "bench", Buckets: 16})
	if err != nil {
		b.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	shareDone := make(chan struct{})
	go func() { defer close(shareDone); sharer.Run(sctx) }()
	b.Cleanup(func() { stop(); <-shareDone })
	deadline := time.Now().Add(60 * time.Second)
	for len(sharer.Held()) < sharer.Buckets() {
		if time.Now().After(deadline) {
			b.Fatalf("the Sharer holds %d of %d buckets after 60s", len(sharer.Held()), sharer.Buckets())
		}
		time.Sleep(50 * time.Millisecond)
	}

	conn := cs.Conn
	newChecker := func(b *testing.B, clock func() time.Time, limits Limits) *Checker {
		docs, err := postgres.Open(ctx, pgservertest.NewDatabase(b, pg), postgres.Options{})
		if err != nil {
			b.Fatalf("open health store: %v", err)
		}
		b.Cleanup(docs.Close)
		return NewChecker(CheckerConfig{Clusters: csv1.NewClustersClient(conn), NodePools: csv1.NewNodePoolsClient(conn),
			Shards: csv1.NewProvisionShardsClient(conn), Probes: probes, Owner: sharer, Limits: limits, Now: clock,
			Reports: docs, Replica: "bench"})
	}
	pass := func(b *testing.B, c *Checker, m *passMeter) {
		m.start(b)
		if err := c.Pass(ctx); err != nil {
			b.Fatalf("pass: %v", err)
		}
		m.stop(b)
		if r, ok := c.Report(seededID(0)); !ok || r.Verdict.Health != Healthy {
			b.Fatalf("cluster %s after a pass: %+v, want healthy", seededID(0), r.Verdict)
		}
		c.mu.Lock()
		checked := len(c.reports)
		c.mu.Unlock()
		if checked != benchClusters {
			b.Fatalf("a pass checked %d clusters, want all %d (the Sharer holds %d buckets)", checked, benchClusters, len(sharer.Held()))
		}
	}

	b.Run("first", func(b *testing.B) {
		m := newPassMeter(pg)
		for b.Loop() {
			b.StopTimer()
			c := newChecker(b, time.Now, Limits{})
			b.StartTimer()
			pass(b, c, m)
		}
		m.report(b)
	})
	b.Run("steady", func(b *testing.B) {
		c := newChecker(b, time.Now, Limits{})
		pass(b, c, newPassMeter(pg)) // the first pass, not measured here
		m := newPassMeter(pg)
		if path := os.Getenv("MONITOR_PASS_PROFILE"); path != "" {
			// The steady passes' CPU profile alone, without the seeding and the other passes.
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				b.Fatal(err)
			}
			defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
		}
		for b.Loop() {
			pass(b, c, m)
		}
		m.report(b)
	})
	b.Run("rewrite", func(b *testing.B) {
		var mu sync.Mutex
		now := time.Now()
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		c := newChecker(b, clock, Limits{FeedbackStaleAfter: 1000 * time.Hour, ChangeSLO: 1000 * time.Hour})
		pass(b, c, newPassMeter(pg))
		m := newPassMeter(pg)
		for b.Loop() {
			mu.Lock()
			now = now.Add(rewriteAfter + time.Minute)
			mu.Unlock()
			pass(b, c, m)
		}
		m.report(b)
	})
}

func benchShardName(i int) string { return "mgmt-" + strconv.Itoa(i+1) }

// seededID is the ID of the i-th seeded cluster: hex like Cluster Service's IDs.
func seededID(i int) string { return fmt.Sprintf("%032x", i+1) }

// seedFleet registers the shards and inserts the clusters and node pools straight into the
// store, a few at a time.
func seedFleet(b *testing.B, db *csstore.Store) {
	b.Helper()
	ctx := context.Background()
	for i := range benchShards {
		if _, err := db.RegisterShard(ctx, placement.Shard{Name: benchShardName(i), Status: csv1.ShardStatus_SHARD_STATUS_ACTIVE, MaxClusters: benchClusters}); err != nil {
			b.Fatalf("register shard: %v", err)
		}
	}
	const sub = "00000000-0000-0000-0000-000000000001"
	fed := timestamppb.New(time.Now().Add(-time.Minute))
	status := func(i int) *csv1.ClusterStatus {
		available := []*csv1.Condition{{Type: "Available", Status: "True"}}
		switch {
		case i%100 == 99: // 10
			return &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_ERROR, ErrorCode: "InvalidReleaseImage"}
		case i%100 >= 97: // 20
			return &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_INSTALLING}
		case i%200 == 96: // 5
			return &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY, FeedbackTime: fed, FeedbackGeneration: 1,
				Conditions: append(available, &csv1.Condition{Type: "Degraded", Status: "True", Reason: "Bench"})}
		}
		return &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY, Conditions: available, FeedbackTime: fed, FeedbackGeneration: 1}
	}
	work := make(chan int)
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := seedOne(ctx, db, sub, i, status(i)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range benchClusters {
		select {
		case work <- i:
		case err := <-errs:
			close(work)
			wg.Wait()
			b.Fatal(err)
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
}

func seedOne(ctx context.Context, db *csstore.Store, sub string, i int, st *csv1.ClusterStatus) error {
	id := seededID(i)
	name := "c" + strconv.Itoa(i)
	rid := "/subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/" + name
	if _, _, err := db.CreateCluster(ctx, &csstore.Cluster{ID: id, ARMResourceID: rid, Namespace: "ocm-" + id, Status: st,
		Spec: &csv1.ClusterSpec{VersionId: "4.19.17", ChannelGroup: "stable", Azure: &csv1.AzureSpec{
			SubscriptionId: sub, ResourceGroup: "rg", Location: "westus3",
			SubnetId:               "/subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/workers",
			NetworkSecurityGroupId: "/subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg",
		}}}, placement.LeastLoaded{}); err != nil {
		return fmt.Errorf("create cluster %d: %w", i, err)
	}
	np, _, err := db.NodePools().Create(ctx, &csstore.NodePool{ID: fmt.Sprintf("%032x", benchClusters+i+1), ClusterID: id, ARMResourceID: rid + "/nodePools/np1",
		Spec: &csv1.NodePoolSpec{Replicas: 2, VersionId: "4.19.17", Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3"}}})
	if err != nil {
		return fmt.Errorf("create node pool of cluster %d: %w", i, err)
	}
	if _, err := db.UpdateNodePoolStatus(ctx, np.ID, np.Revision, &csv1.NodePoolStatus{State: csv1.NodePoolState_NODE_POOL_STATE_READY}); err != nil {
		return fmt.Errorf("node pool status of cluster %d: %w", i, err)
	}
	return nil
}

// passMeter adds up wall time and CPU (this process's, and PostgreSQL's processes') over the
// passes it is started and stopped around.
type passMeter struct {
	pgPID             int
	wall, self, pgCPU time.Duration
	passes            int
	t0                time.Time
	self0, pg0        time.Duration
}

func newPassMeter(pg *pgserver.Server) *passMeter { return &passMeter{pgPID: pg.PID()} }

func (m *passMeter) start(b *testing.B) {
	// PostgreSQL's CPU is read first, so reading /proc is not charged to the pass.
	m.pg0 = childrenCPU(b, m.pgPID)
	m.self0 = selfCPU(b)
	m.t0 = time.Now()
}

func (m *passMeter) stop(b *testing.B) {
	m.wall += time.Since(m.t0)
	m.self += selfCPU(b) - m.self0 // before reading /proc, as above
	m.pgCPU += childrenCPU(b, m.pgPID) - m.pg0
	m.passes++
}

func (m *passMeter) report(b *testing.B) {
	if m.passes == 0 {
		return
	}
	n := float64(m.passes)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / n }
	b.ReportMetric(ms(m.wall), "ms/pass")
	b.ReportMetric(ms(m.self), "cpu-ms/pass")
	b.ReportMetric(ms(m.self)*1000/benchClusters, "cpu-us/cluster")
	b.ReportMetric(ms(m.pgCPU), "pg-cpu-ms/pass")
	b.ReportMetric((ms(m.self)+ms(m.pgCPU))*1000/benchClusters, "all-cpu-us/cluster")
}

// selfCPU is this process's user+system CPU time so far.
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// childrenCPU is the user+system CPU time of the live children of pid (PostgreSQL's backends and
// background processes under its postmaster) and of pid itself, from /proc.
func childrenCPU(b *testing.B, pid int) time.Duration {
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		b.Fatal(err)
	}
	var ticks int64
	for _, d := range dirs {
		raw, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// Fields after the command (in parentheses, which may hold spaces): state ppid ...
		// utime is field 14 and stime 15 of the whole line, so 11 and 12 after the command.
		s := string(raw)
		rest := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(rest) < 13 {
			continue
		}
		self, _ := strconv.Atoi(filepath.Base(d))
		ppid, _ := strconv.Atoi(rest[1])
		if self != pid && ppid != pid {
			continue
		}
		ut, _ := strconv.ParseInt(rest[11], 10, 64)
		st, _ := strconv.ParseInt(rest[12], 10, 64)
		ticks += ut + st
	}
	// USER_HZ is 100 on Linux.
	return time.Duration(ticks) * 10 * time.Millisecond
}
