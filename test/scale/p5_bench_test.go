// Package scale holds P5, the scale benchmark: a region of its own (four management
// clusters) filled with status-only hosted clusters through ARM, measured at checkpoints. It is a
// Benchmark only: plain `go test` (make test) compiles it and starts nothing.
package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	workv1 "open-cluster-management.io/api/work/v1"
	workpayload "open-cluster-management.io/sdk-go/pkg/cloudevents/clients/work/payload"
	sourcecodec "open-cluster-management.io/sdk-go/pkg/cloudevents/clients/work/source/codec"
	ceclients "open-cluster-management.io/sdk-go/pkg/cloudevents/generic/clients"
	grpcoptions "open-cluster-management.io/sdk-go/pkg/cloudevents/generic/options/grpc"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/maestro"
	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/test/internal/armclient"
	"github.com/openhcp/openhcp/test/internal/benchreport"
	"github.com/openhcp/openhcp/test/internal/procstat"
)

const apiVersion = "2024-06-10-preview"

// checkpoint is everything measured once the region holds Clusters clusters, all Succeeded.
type checkpoint struct {
	Clusters int `json:"clusters"`
	// ListedSubscriptionClusters is how many clusters the subscription the frontend list reads holds.
	ListedSubscriptionClusters int `json:"listedSubscriptionClusters"`
	// CreateSeconds is from the step's first PUT to every cluster of the step Succeeded in ARM.
	// Succeeded is how many of them ARM listed as Succeeded when the step ended (fewer than
	// Clusters when P5_SETTLE_TIMEOUT ran out first); the measurements run regardless.
	Succeeded     int                `json:"succeeded"`
	CreateSeconds float64            `json:"createSeconds"`
	CreatedInStep int                `json:"createdInStep"`
	CreatesPerSec float64            `json:"succeededPerSecond"`
	PutErrors     int                `json:"putErrors"`
	ErrorClusters int                `json:"errorClusters"`
	Shards        map[string]int32   `json:"shards"`
	Processes     []procMem          `json:"processes"`
	RSSByGroupMB  map[string]float64 `json:"rssByGroupMB"`
	Resync        *resync            `json:"agentResync,omitempty"`
	// SteadyCPU is each part of the region's CPU use, in percent of one core, over
	// SteadyWindowSeconds once every cluster of the checkpoint was Succeeded and
	// P5_STEADY_DELAY had passed (steadyCPU): the cost of holding this many clusters.
	SteadyCPU           map[string]float64 `json:"steadyCpuPercent,omitempty"`
	SteadyWindowSeconds float64            `json:"steadyWindowSeconds,omitempty"`
	LoadAverage         string             `json:"loadAverage"`
	At                  string             `json:"at"`
	PartialByBudget     bool               `json:"partialByBudget,omitempty"`
}

// resync is one agent full resync (see measureResync for the definition).
type resync struct {
	Consumer string `json:"consumer"`
	Works    int    `json:"works"`
	// Seen is how many distinct works reported status within the timeout.
	Seen        int     `json:"seen"`
	FirstMs     float64 `json:"firstStatusMs"`
	HalfMs      float64 `json:"halfMs"`
	P90Ms       float64 `json:"ninetyPercentMs"`
	AllMs       float64 `json:"allMs"`
	TimedOut    bool    `json:"timedOut,omitempty"`
	StopSeconds float64 `json:"oldAgentStopSeconds"`
	// ConsumerEvents and AllEvents count the status events the Maestro server(s) passed on to a
	// source subscriber while the resync was measured: of the restarted agent's works, and of
	// every consumer. AllEvents over the window is the servers' status throughput then, which
	// bounds how fast a resync can finish (docs/performance.md).
	ConsumerEvents int     `json:"consumerStatusEvents"`
	AllEvents      int     `json:"allStatusEvents"`
	WindowSeconds  float64 `json:"windowSeconds"`
}

// BenchmarkP5Scale (P5): hosted clusters created through ARM (the real path) in steps
// up to checkpoints, in a region of its own: 4 management clusters (P5_MGMT), each a provision
// shard with room for the largest size, hypershift-sim marking every HostedCluster Available
// after 1 s (no hosted API servers). At each checkpoint, once every cluster is Succeeded in ARM: the memory
// (VmRSS, VmHWM, PSS from /proc) of every process of the region; Cluster Service ListClusters of
// every cluster (all pages of the API's default 100) and WatchClusters from revision 0 to its
// BOOKMARK; the frontend's ARM list of one subscription holding min(size, 1,000) clusters (all
// pages); the spread over shards (ListShards); the steady-state CPU of every process (steadyCPU,
// also once before the first create, the baseline each checkpoint is compared with); and one
// agent full resync (measureResync). Not a pass/fail test; it runs once whatever b.N is.
//
// Knobs: P5_SIZES (checkpoints, default 1000,2000,5000; -short 100,200), P5_PER_SUBSCRIPTION
// (clusters per subscription, default 1000: cluster i goes to subscription i/1000, so the
// listed one fills first), P5_WINDOW (most clusters created but not yet READY, default 100: the
// create loop is closed, so it runs at the rate the region sustains), P5_PUT_CONCURRENCY
// (default 4), P5_REPEATS (each list and watch, default 10; -short 3), P5_RESYNC_TIMEOUT
// (default 5m), P5_SETTLE_TIMEOUT (per step, waiting for Succeeded, default 30m), P5_BUDGET
// (default 45m of creating; when spent, no more creates: the clusters created so far are the
// last checkpoint; 0: no limit), P5_MAESTRO_SERVERS (Maestro server instances sharing the agents'
// status events, localregion.Config.MaestroServers; default 1), P5_MGMT (management clusters,
// default 4), P5_SYNC_INTERVALS (an agent's --status-sync-interval by management cluster, e.g.
// mgmt-2=60s: the others keep 10 s, so shards holding as many works compare in one window),
// P5_STEADY_DELAY (wait after a step settles, default 60s; -short 10s) and P5_STEADY_WINDOW
// (the CPU window, default 60s; -short 10s; 0: not measured), P5_CS_RESYNC (Cluster Service's
// --resync-period, default 5m as in production; the local region's own is 30s), BENCH_OUT.
// JSON: p5-scale.json (latencies and every checkpoint's details), p5-scale-rss.json and
// p5-scale-cpu.json.
// Run: cd test && go test ./scale -run '^$' -bench P5Scale -benchtime 1x -timeout 150m
func BenchmarkP5Scale(b *testing.B) {
	def, defRepeats, defSteady := []int{1000, 2000, 5000}, 10, time.Minute
	if testing.Short() {
		def, defRepeats, defSteady = []int{100, 200}, 3, 10*time.Second
	}
	sizes := envInts(b, "P5_SIZES", def)
	sort.Ints(sizes)
	perSub := envInt(b, "P5_PER_SUBSCRIPTION", 1000)
	window := envInt(b, "P5_WINDOW", 100)
	putConc := envInt(b, "P5_PUT_CONCURRENCY", 4)
	repeats := envInt(b, "P5_REPEATS", defRepeats)
	resyncTimeout := envDuration(b, "P5_RESYNC_TIMEOUT", 5*time.Minute)
	settleTimeout := envDuration(b, "P5_SETTLE_TIMEOUT", 30*time.Minute)
	budget := envDuration(b, "P5_BUDGET", 45*time.Minute)
	maxSize := sizes[len(sizes)-1]
	maestroServers := envInt(b, "P5_MAESTRO_SERVERS", 1)
	mgmt := envInt(b, "P5_MGMT", 4)
	intervals := envIntervals(b, "P5_SYNC_INTERVALS")
	steadyDelay := envDuration(b, "P5_STEADY_DELAY", defSteady)
	steadyWindow := envDuration(b, "P5_STEADY_WINDOW", defSteady)
	csResync := envDuration(b, "P5_CS_RESYNC", 5*time.Minute)

	// Each shard could take every cluster, so placement (not capacity) decides the spread.
	s := startRegion(b, localregion.Config{ManagementClusters: mgmt, ShardCapacity: maxSize + 100, MaestroServers: maestroServers,
		AgentStatusSyncIntervals: intervals, ClusterServiceResync: csResync,
		// Thousands of simulated clusters: none gets a real hosted kube-apiserver (about 280 MiB
		// each), so the figures are the control path's, as before hosted apiservers existed.
		Sim: localregion.SimConfig{HostedAPIServers: -1}})
	defer s.stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.track(ctx, b)
	s.subscribeMaestro(ctx, b)

	nSubs := (maxSize + perSub - 1) / perSub
	for i := range nSubs {
		s.subs = append(s.subs, uuid.NewString())
		s.registerSubscription(b, s.subs[i])
	}
	s.perSub = perSub

	sizesArg := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(sizes)), ","), "[]")
	short := ""
	if testing.Short() {
		short = " -short"
	}
	cmd := fmt.Sprintf("cd test && P5_SIZES=%s P5_PER_SUBSCRIPTION=%d P5_WINDOW=%d P5_PUT_CONCURRENCY=%d P5_REPEATS=%d P5_BUDGET=%s P5_SETTLE_TIMEOUT=%s P5_RESYNC_TIMEOUT=%s P5_MAESTRO_SERVERS=%d P5_MGMT=%d P5_SYNC_INTERVALS='%s' P5_STEADY_DELAY=%s P5_STEADY_WINDOW=%s P5_CS_RESYNC=%s go test ./scale -run '^$' -bench P5Scale -benchtime 1x -timeout 150m%s",
		sizesArg, perSub, window, putConc, repeats, budget, settleTimeout, resyncTimeout, maestroServers, mgmt, os.Getenv("P5_SYNC_INTERVALS"), steadyDelay, steadyWindow, csResync, short)
	rep := newReport("p5-scale", fmt.Sprintf("P5: list, watch and agent resync against the number of hosted clusters (%d management clusters)", mgmt), cmd)
	rssRep := newReport("p5-scale-rss", "P5: resident memory (VmRSS) of the region's processes against the number of hosted clusters", cmd)
	rssRep.Chart, rssRep.YUnit = "values", "MB"
	cpuRep := newReport("p5-scale-cpu", "P5: steady-state CPU of the region's processes against the number of hosted clusters", cmd)
	cpuRep.Chart, cpuRep.YUnit = "values", "% of one core"
	rep.Notes = append(rep.Notes, fmt.Sprintf("region up in %s", s.upTook.Round(time.Second)))

	// The baseline: the same region holding no cluster.
	idle := &checkpoint{}
	if steadyWindow > 0 {
		s.measureSteady(ctx, b, idle, steadyDelay, steadyWindow)
		idle.At, idle.LoadAverage = time.Now().UTC().Format(time.RFC3339), benchreport.LoadAvg()
		rep.Checkpoints = append(rep.Checkpoints, *idle)
	}

	deadline := time.Time{}
	if budget > 0 {
		deadline = time.Now().Add(budget)
	}
	// Each series keeps its own checkpoints: one can miss a checkpoint (a resync that timed out
	// has no time), so a series' values are paired with the sizes they were measured at.
	type values struct {
		xs []int
		vs []float64
	}
	series := map[string]*values{}
	record := func(name string, x int, v float64) {
		if series[name] == nil {
			series[name] = &values{}
		}
		series[name].xs, series[name].vs = append(series[name].xs, x), append(series[name].vs, v)
	}
	for _, size := range sizes {
		cp, partial := s.grow(ctx, b, size, window, putConc, deadline, settleTimeout)
		if cp == nil {
			break
		}
		logf(b, "checkpoint %d clusters: %d created in %.0f s (%.2f Succeeded/s), load average %s", cp.Clusters, cp.CreatedInStep, cp.CreateSeconds, cp.CreatesPerSec, cp.LoadAverage)

		procs, err := regionProcesses()
		if err != nil {
			b.Fatalf("read /proc: %v", err)
		}
		cp.Processes, cp.RSSByGroupMB = procs, groupRSS(procs)
		for _, g := range sortedKeys(cp.RSSByGroupMB) {
			rssRep.Points = append(rssRep.Points, point{Series: g, Offered: float64(cp.Clusters), N: 1, Value: cp.RSSByGroupMB[g]})
		}
		cp.Shards = s.shardCounts(ctx, b)
		if steadyWindow > 0 {
			s.measureSteady(ctx, b, cp, steadyDelay, steadyWindow)
			for _, g := range sortedKeys(cp.SteadyCPU) {
				cpuRep.Points = append(cpuRep.Points, point{Series: g, Offered: float64(cp.Clusters), N: 1, Value: cp.SteadyCPU[g]})
			}
			cpuRep.Notes = steadyCostNotes(idle, cp, intervals)
			for _, n := range cpuRep.Notes {
				logf(b, "steady CPU: %s", n)
			}
			cpuRep.write(b)
		}

		csList := s.timeCSList(ctx, b, repeats)
		csWatch := s.timeCSWatch(ctx, b, repeats)
		cp.ListedSubscriptionClusters = min(cp.Clusters, perSub)
		feList := s.timeFrontendList(b, s.subs[0], repeats, cp.ListedSubscriptionClusters)
		cp.Resync = s.measureResync(ctx, b, "mgmt-1", int(cp.Shards["mgmt-1"]), resyncTimeout)

		pts := []point{
			latency("Cluster Service ListClusters, every cluster (pages of 100)", cp.Clusters, csList, 0),
			latency("Cluster Service WatchClusters from 0 to BOOKMARK", cp.Clusters, csWatch, 0),
			// The series name stays the same at every checkpoint (one line in the chart); the
			// subscription holds min(clusters, P5_PER_SUBSCRIPTION), recorded in the checkpoint.
			latency(fmt.Sprintf("frontend ARM list of one subscription (up to %d clusters, pages of 100)", perSub), cp.Clusters, feList, 0),
		}
		if r := cp.Resync; r != nil && r.AllMs > 0 {
			pts = append(pts, point{Series: "agent full resync of mgmt-1 (restart → every work's status)", Offered: float64(cp.Clusters), N: 1, P50ms: r.AllMs, P99ms: r.AllMs, MaxMs: r.AllMs})
		}
		rep.Points = append(rep.Points, pts...)
		cp.At, cp.LoadAverage = time.Now().UTC().Format(time.RFC3339), benchreport.LoadAvg()
		cp.PartialByBudget = partial
		rep.Checkpoints = append(rep.Checkpoints, *cp)

		for _, p := range pts {
			record(p.Series+" p50 (ms)", cp.Clusters, p.P50ms)
		}
		for _, g := range []string{"cluster-service", "frontend", "backend", "admin", "maestro server"} {
			record(g+" RSS (MB)", cp.Clusters, cp.RSSByGroupMB[g])
		}
		logf(b, "| clusters | series | n | p50 ms | p99 ms | max ms |")
		for _, p := range pts {
			logf(b, "| %d | %s | %d | %.1f | %.1f | %.1f |", cp.Clusters, p.Series, p.N, p.P50ms, p.P99ms, p.MaxMs)
		}
		logf(b, "shards: %v", cp.Shards)
		for _, g := range sortedKeys(cp.RSSByGroupMB) {
			logf(b, "RSS %s: %.0f MB", g, cp.RSSByGroupMB[g])
		}
		if r := cp.Resync; r != nil {
			logf(b, "agent resync %s: %d works, %d reported; first %.0f ms, half %.0f ms, 90%% %.0f ms, all %.0f ms (timed out: %v; old agent stopped in %.1f s)",
				r.Consumer, r.Works, r.Seen, r.FirstMs, r.HalfMs, r.P90Ms, r.AllMs, r.TimedOut, r.StopSeconds)
			logf(b, "status events passed on by Maestro during the resync's %.1f s: %d of %s (%.1f per work), %d of all consumers (%.1f/s)",
				r.WindowSeconds, r.ConsumerEvents, r.Consumer, float64(r.ConsumerEvents)/float64(max(r.Works, 1)), r.AllEvents, float64(r.AllEvents)/max(r.WindowSeconds, 1e-9))
		}
		rep.Notes = rep.Notes[:1]
		for _, k := range sortedKeys(series) {
			unit := "ms"
			if strings.HasSuffix(k, "(MB)") {
				unit = "MB"
			}
			if g := growth(k, unit, series[k].xs, series[k].vs); g != "" {
				rep.Notes = append(rep.Notes, g)
			}
		}
		rep.write(b)
		rssRep.write(b)
		if partial {
			logf(b, "P5_BUDGET spent: stopped at %d clusters", cp.Clusters)
			break
		}
	}
	for _, n := range rep.Notes {
		b.Log(n)
	}
}

// groupRSS sums the region's processes by what they are: one entry per process, except
// PostgreSQL, whose processes share memory, so its entry is the sum of their PSS.
// logf logs to the benchmark and, as it happens, to stderr: a benchmark's log is printed only
// when it ends, and P5 runs for an hour or more.
func logf(b *testing.B, format string, args ...any) {
	b.Helper()
	b.Logf(format, args...)
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func groupRSS(procs []procMem) map[string]float64 {
	out := map[string]float64{}
	pgPSS := 0.0
	for _, p := range procs {
		if strings.HasPrefix(p.Name, "postgres") {
			pgPSS += p.PSSMB
			continue
		}
		name := p.Name
		if _, dup := out[name]; dup {
			name = fmt.Sprintf("%s (pid %d)", name, p.PID)
		}
		out[name] = p.RSSMB
	}
	out["postgres (every process, PSS sum)"] = pgPSS
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// p5 is the benchmark's region and its clients.
type p5 struct {
	region *localregion.Region
	dir    string
	upTook time.Duration
	arm    *http.Client
	conn   *grpc.ClientConn
	cs     csv1.ClustersClient
	shards csv1.ProvisionShardsClient

	subs   []string
	perSub int
	// created counts answered PUTs (clusters 0..created-1 exist).
	created  atomic.Int64
	putErrs  atomic.Int64
	stopOnce sync.Once
	// agent is the Maestro agent this benchmark restarted last (nil: the region's own).
	agent *mgmtcluster.Process

	mu     sync.Mutex
	states map[string]csv1.ClusterState // lower-case ARM resource ID → state, from WatchClusters
	// marks: works (resource IDs) of a consumer whose status arrived after the resync mark.
	markConsumer string
	markSeen     map[string]time.Time
	// markEvents and markAll count status events while a resync is measured: of the marked
	// consumer, and of all.
	markEvents, markAll int
}

// startRegion brings up P5's own region and makes sure it stops: on return of the benchmark, on
// Ctrl-C or SIGTERM (the handler stops it, then exits), and on a failed start (localregion.Up
// stops what it started). Children also die with this process (Pdeathsig).
func startRegion(b *testing.B, cfg localregion.Config) *p5 {
	dir, err := os.MkdirTemp("", "openhcp-p5-")
	if err != nil {
		b.Fatal(err)
	}
	// Under root, PostgreSQL runs as the postgres user and must traverse this directory.
	_ = os.Chmod(dir, 0o755)
	s := &p5{dir: dir, states: map[string]csv1.ClusterState{}}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		if got, ok := <-sig; ok {
			fmt.Fprintf(os.Stderr, "\n%v: stopping the P5 region…\n", got)
			s.stop()
			os.Exit(130)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	start := time.Now()
	cfg.StateDir, cfg.Progress = dir, os.Stderr
	cfg.Sim = localregion.SimConfig{AvailableDelay: time.Second, DeleteDelay: time.Second}
	s.region, err = localregion.Up(ctx, cfg)
	if err != nil {
		signal.Stop(sig)
		b.Fatalf("bring up the P5 region (logs in %s): %v", filepath.Join(dir, "logs"), err)
	}
	s.upTook = time.Since(start)
	logf(b, "P5 region up in %s (state and logs in %s)", s.upTook.Round(time.Millisecond), dir)
	if s.arm, err = s.region.Info.Frontend.HTTPClient(120 * time.Second); err != nil {
		s.stop()
		b.Fatal(err)
	}
	s.arm.Transport.(*http.Transport).MaxIdleConnsPerHost = 64
	if s.conn, err = localregion.DialClusterService(s.region.Info.ClusterService.GRPC, s.region.Info.ClusterService.ClientTLS); err != nil {
		s.stop()
		b.Fatal(err)
	}
	s.cs, s.shards = csv1.NewClustersClient(s.conn), csv1.NewProvisionShardsClient(s.conn)
	return s
}

// stop ends the restarted agent and the region; the logs stay in the state directory, which is
// removed when nothing failed.
func (s *p5) stop() {
	s.stopOnce.Do(func() {
		if s.conn != nil {
			s.conn.Close()
		}
		s.mu.Lock()
		agent := s.agent
		s.mu.Unlock()
		if agent != nil {
			agent.Stop(10 * time.Second)
		}
		if s.region != nil {
			s.region.Stop()
		}
		// The logs stay for reading; the built binaries (over 200 MB) go.
		_ = os.RemoveAll(filepath.Join(s.dir, "bin"))
		fmt.Fprintf(os.Stderr, "P5 region stopped; logs in %s\n", filepath.Join(s.dir, "logs"))
	})
}

// track follows WatchClusters from revision 0 for the whole run, keeping each cluster's state.
func (s *p5) track(ctx context.Context, b *testing.B) {
	go func() {
		var rev int64
		for ctx.Err() == nil {
			stream, err := s.cs.WatchClusters(ctx, &csv1.WatchClustersRequest{SinceRevision: rev})
			if err != nil {
				time.Sleep(time.Second)
				continue
			}
			for {
				ev, err := stream.Recv()
				if err != nil {
					break
				}
				if ev.GetRevision() > rev {
					rev = ev.GetRevision()
				}
				c := ev.GetCluster()
				if c == nil {
					continue
				}
				id := strings.ToLower(c.GetArmResourceId())
				s.mu.Lock()
				if ev.GetType() == csv1.EventType_EVENT_TYPE_DELETED {
					delete(s.states, id)
				} else {
					s.states[id] = c.GetStatus().GetState()
				}
				s.mu.Unlock()
			}
			time.Sleep(time.Second)
		}
	}()
}

func (s *p5) counts() (ready, failed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.states {
		switch st {
		case csv1.ClusterState_CLUSTER_STATE_READY:
			ready++
		case csv1.ClusterState_CLUSTER_STATE_ERROR:
			failed++
		}
	}
	return
}

// subscribeMaestro subscribes to the Maestro server's gRPC source API as source
// "cluster-service" (Cluster Service's identity, the only source this region authorizes; Maestro
// sends every subscriber of the source every status event, so Cluster Service still gets all of
// them) and records, while a resync is being measured, when each work of the marked consumer
// first reports status.
func (s *p5) subscribeMaestro(ctx context.Context, b *testing.B) {
	info := s.region.Info.Maestro
	tlsCfg, err := info.ClientTLS.Files().Client(info.GRPC)
	if err != nil {
		b.Fatal(err)
	}
	dialer := &grpcoptions.GRPCDialer{URL: info.GRPC, TLSConfig: tlsCfg}
	b.Cleanup(func() { dialer.Close() })
	client, err := ceclients.NewCloudEventSourceClient(ctx,
		grpcoptions.NewSourceOptions(&grpcoptions.GRPCOptions{Dialer: dialer}, maestro.DefaultSourceID, workpayload.ManifestBundleEventDataType),
		nil, nil, sourcecodec.NewManifestBundleCodec())
	if err != nil {
		b.Fatalf("maestro source subscription: %v", err)
	}
	client.Subscribe(ctx, func(_ context.Context, w *workv1.ManifestWork) error {
		now := time.Now()
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.markSeen == nil {
			return nil
		}
		s.markAll++
		if w.Namespace == s.markConsumer {
			s.markEvents++
			if _, ok := s.markSeen[string(w.UID)]; !ok {
				s.markSeen[string(w.UID)] = now
			}
		}
		return nil
	})
}

// grow creates clusters through ARM until the region holds size (or the budget is spent), then
// waits until each is READY in Cluster Service and Succeeded in ARM. The loop is closed: at
// most window clusters are created but not yet READY, with putConc PUTs in flight.
func (s *p5) grow(ctx context.Context, b *testing.B, size, window, putConc int, deadline time.Time, settle time.Duration) (*checkpoint, bool) {
	from := int(s.created.Load())
	if from >= size {
		return nil, false
	}
	start := time.Now()
	errs0 := s.putErrs.Load()
	var next atomic.Int64
	next.Store(int64(from))
	var partial atomic.Bool
	var wg sync.WaitGroup
	progress := time.NewTicker(30 * time.Second)
	defer progress.Stop()
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-progress.C:
				ready, failed := s.counts()
				logf(b, "%s: %d created, %d READY, %d ERROR (load %s)", time.Now().UTC().Format("15:04:05"), s.created.Load(), ready, failed, benchreport.LoadAvg())
			}
		}
	}()
	for range putConc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if !deadline.IsZero() && time.Now().After(deadline) {
					partial.Store(true)
					return
				}
				// Closed loop: wait while the window is full.
				if ready, failed := s.counts(); int(s.created.Load())-ready-failed >= window {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				i := int(next.Add(1) - 1)
				if i >= size {
					return
				}
				if err := s.put(i); err != nil {
					s.putErrs.Add(1)
					logf(b, "PUT cluster %d: %v", i, err)
				}
				s.created.Add(1)
			}
		}()
	}
	wg.Wait()
	n := int(s.created.Load())
	// Wait for every cluster to be READY in Cluster Service, then Succeeded in ARM.
	settleBy := time.Now().Add(settle)
	for {
		ready, failed := s.counts()
		if ready+failed >= n || time.Now().After(settleBy) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	close(done)
	succeeded := 0
	for {
		succeeded = s.armSucceeded(b)
		ready, failed := s.counts()
		if succeeded+failed >= n || time.Now().After(settleBy) {
			if succeeded+failed < n {
				logf(b, "after %s: %d of %d clusters Succeeded in ARM, %d READY in Cluster Service, %d ERROR", settle, succeeded, n, ready, failed)
			}
			break
		}
		time.Sleep(2 * time.Second)
	}
	took := time.Since(start)
	_, failed := s.counts()
	return &checkpoint{Clusters: n, Succeeded: succeeded, CreatedInStep: n - from, CreateSeconds: took.Seconds(), CreatesPerSec: float64(n-from) / took.Seconds(),
		PutErrors: int(s.putErrs.Load() - errs0), ErrorClusters: failed}, partial.Load()
}

func (s *p5) clusterPath(i int) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/rg-p5/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/p5-%05d", s.subs[i/s.perSub], i)
}

// put creates cluster i, sending it again as the SDK would (429, 5xx or no answer) for a few
// seconds.
func (s *p5) put(i int) error {
	sub := s.subs[i/s.perSub]
	retry := armclient.Retry{For: 3 * time.Second, First: time.Second, Max: 2 * time.Second}
	r, _ := retry.Do(context.Background(), s.arm, http.MethodPut, s.region.Info.Frontend.URL+s.clusterPath(i)+"?api-version="+apiVersion,
		clusterBody(s.region.Info.Location, sub, "rg-p5"))
	if r.Err != nil || r.Status != http.StatusCreated && r.Status != http.StatusOK {
		return fmt.Errorf("status %d, %v: %.300s", r.Status, r.Err, r.Raw)
	}
	return nil
}

// do sends one request as ARM would (armclient.Do); body is JSON.
func (s *p5) do(method, u string, body []byte) (int, []byte, error) {
	var b any
	if body != nil {
		b = json.RawMessage(body)
	}
	r := armclient.Do(context.Background(), s.arm, method, u, b)
	return r.Status, []byte(r.Raw), r.Err
}

func (s *p5) registerSubscription(b *testing.B, sub string) {
	body, _ := json.Marshal(map[string]any{
		"state": "Registered", "registrationDate": time.Now().UTC().Format(time.RFC3339),
		"properties": map[string]any{"tenantId": uuid.NewString()},
	})
	status, raw, err := s.do(http.MethodPut, s.region.Info.Frontend.URL+"/subscriptions/"+sub+"?api-version=2.0", body)
	if err != nil || status != http.StatusOK && status != http.StatusCreated {
		b.Fatalf("register subscription: %d %v %s", status, err, raw)
	}
}

// listARM reads every page of a subscription's cluster list and returns the items' provisioning
// states.
func (s *p5) listARM(sub string) ([]string, error) {
	u := s.region.Info.Frontend.URL + "/subscriptions/" + sub + "/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters?api-version=" + apiVersion
	var states []string
	for u != "" {
		status, raw, err := s.do(http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		if status != http.StatusOK {
			return nil, fmt.Errorf("list: %d %.300s", status, raw)
		}
		var page struct {
			Value []struct {
				Properties struct {
					ProvisioningState string `json:"provisioningState"`
				} `json:"properties"`
			} `json:"value"`
			NextLink string `json:"nextLink"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, err
		}
		for _, v := range page.Value {
			states = append(states, v.Properties.ProvisioningState)
		}
		u = page.NextLink
	}
	return states, nil
}

// armSucceeded counts the clusters ARM lists as Succeeded, over every subscription.
func (s *p5) armSucceeded(b *testing.B) int {
	n := 0
	for _, sub := range s.subs {
		states, err := s.listARM(sub)
		if err != nil {
			logf(b, "ARM list: %v", err)
			return 0
		}
		for _, st := range states {
			if st == "Succeeded" {
				n++
			}
		}
	}
	return n
}

// timeCSList times ListClusters of every cluster, page by page with the API's default page
// size, repeats times.
func (s *p5) timeCSList(ctx context.Context, b *testing.B, repeats int) []time.Duration {
	var out []time.Duration
	for range repeats {
		start, n, token := time.Now(), 0, ""
		for {
			resp, err := s.cs.ListClusters(ctx, &csv1.ListClustersRequest{PageToken: token})
			if err != nil {
				b.Fatalf("ListClusters: %v", err)
			}
			n += len(resp.GetClusters())
			if token = resp.GetNextPageToken(); token == "" {
				break
			}
		}
		out = append(out, time.Since(start))
		if n < int(s.created.Load())-int(s.putErrs.Load()) {
			logf(b, "ListClusters listed %d clusters, fewer than created", n)
		}
	}
	return out
}

// timeCSWatch times WatchClusters from revision 0 to the BOOKMARK that ends its snapshot.
func (s *p5) timeCSWatch(ctx context.Context, b *testing.B, repeats int) []time.Duration {
	var out []time.Duration
	for range repeats {
		wctx, cancel := context.WithCancel(ctx)
		start := time.Now()
		stream, err := s.cs.WatchClusters(wctx, &csv1.WatchClustersRequest{})
		if err != nil {
			cancel()
			b.Fatalf("WatchClusters: %v", err)
		}
		for {
			ev, err := stream.Recv()
			if err != nil {
				cancel()
				b.Fatalf("WatchClusters: %v", err)
			}
			if ev.GetType() == csv1.EventType_EVENT_TYPE_BOOKMARK {
				break
			}
		}
		out = append(out, time.Since(start))
		cancel()
	}
	return out
}

// timeFrontendList times the ARM list of one subscription, every page, repeats times.
func (s *p5) timeFrontendList(b *testing.B, sub string, repeats, want int) []time.Duration {
	var out []time.Duration
	for range repeats {
		start := time.Now()
		states, err := s.listARM(sub)
		if err != nil {
			b.Fatalf("frontend list: %v", err)
		}
		out = append(out, time.Since(start))
		if len(states) != want {
			logf(b, "frontend list: %d clusters, want %d", len(states), want)
		}
	}
	return out
}

func (s *p5) shardCounts(ctx context.Context, b *testing.B) map[string]int32 {
	resp, err := s.shards.ListShards(ctx, &csv1.ListShardsRequest{})
	if err != nil {
		b.Fatalf("ListShards: %v", err)
	}
	out := map[string]int32{}
	for _, sh := range resp.GetShards() {
		out[sh.GetName()] = sh.GetClusterCount()
	}
	return out
}

// measureResync is the agent full resync: the Maestro agent of consumer is stopped (SIGTERM) and
// started again with the same binary, flags and directory, so it starts with nothing in memory
// and must get every work's spec from the Maestro server again, apply it and report its status.
// Measured from the new process's start to the moment the Maestro server has passed on a status
// event of every one of the consumer's works (works counted as the shard's clusters: each
// status-only cluster is one ManifestWork), as a source subscriber sees them; also the first
// one, half and 90 %. Works whose status does not arrive within timeout are reported as such.
func (s *p5) measureResync(ctx context.Context, b *testing.B, consumer string, works int, timeout time.Duration) *resync {
	if works == 0 {
		return nil
	}
	pid, args, cwd, err := findAgent(consumer)
	if err != nil {
		logf(b, "agent resync: %v", err)
		return nil
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		logf(b, "agent resync: %v", err)
		return nil
	}
	// Its environment too: the region gives each agent its own TMPDIR, where library-go writes
	// the serving certificate it makes itself (not the host's /tmp).
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		logf(b, "agent resync: %v", err)
		return nil
	}
	var env []string
	for _, kv := range strings.Split(string(environ), "\x00") {
		if strings.HasPrefix(kv, "TMPDIR=") {
			env = append(env, kv)
		}
	}
	stopStart := time.Now()
	s.mu.Lock()
	own := s.agent
	s.mu.Unlock()
	if own != nil && own.PID() == pid {
		own.Stop(30 * time.Second)
	} else {
		// The region's own agent: its supervisor reaps it and reports the exit, which nobody
		// reads here; the region's Stop then finds it already gone.
		_ = syscall.Kill(pid, syscall.SIGTERM)
		for i := 0; i < 300 && procstat.Alive(pid); i++ {
			time.Sleep(100 * time.Millisecond)
		}
		if procstat.Alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	r := &resync{Consumer: consumer, Works: works, StopSeconds: time.Since(stopStart).Seconds()}
	s.mu.Lock()
	s.markConsumer, s.markSeen, s.markEvents, s.markAll = consumer, map[string]time.Time{}, 0, 0
	s.mu.Unlock()
	start := time.Now()
	p, err := mgmtcluster.StartProcess(ctx, mgmtcluster.ProcSpec{
		Name: "maestro-agent-" + consumer + "-p5-restarted", Path: exe, Args: args[1:], Dir: cwd, LogDir: s.region.Info.LogDir, Env: env,
	})
	if err != nil {
		b.Fatalf("restart the agent of %s: %v", consumer, err)
	}
	s.mu.Lock()
	s.agent = p
	s.mu.Unlock()
	deadline := start.Add(timeout)
	for {
		s.mu.Lock()
		seen := len(s.markSeen)
		s.mu.Unlock()
		if seen >= works || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.mu.Lock()
	var at []time.Duration
	for _, t := range s.markSeen {
		at = append(at, t.Sub(start))
	}
	s.markSeen = nil
	r.ConsumerEvents, r.AllEvents, r.WindowSeconds = s.markEvents, s.markAll, time.Since(start).Seconds()
	s.mu.Unlock()
	sort.Slice(at, func(i, j int) bool { return at[i] < at[j] })
	r.Seen = len(at)
	nth := func(k int) float64 {
		if k <= 0 || k > len(at) {
			return 0
		}
		return ms(at[k-1])
	}
	if len(at) > 0 {
		r.FirstMs, r.HalfMs, r.P90Ms = nth(1), nth((works+1)/2), nth((works*9+9)/10)
	}
	if len(at) >= works {
		r.AllMs = nth(works)
	} else {
		r.TimedOut = true
	}
	return r
}

// measureSteady waits delay (the last creates' transitions end: Cluster Service switches each
// READY cluster's work back to polled feedback, an update the agent applies and reports) and
// then records cp's steady-state CPU over window.
func (s *p5) measureSteady(ctx context.Context, b *testing.B, cp *checkpoint, delay, window time.Duration) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(delay):
	}
	cpu, err := steadyCPU(ctx, window)
	if err != nil {
		logf(b, "steady CPU: %v", err)
		return
	}
	cp.SteadyCPU, cp.SteadyWindowSeconds = cpu, window.Seconds()
	var parts []string
	for _, g := range sortedKeys(cpu) {
		parts = append(parts, fmt.Sprintf("%s %.1f", g, cpu[g]))
	}
	logf(b, "steady CPU at %d clusters over %s (%% of one core): %s", cp.Clusters, window, strings.Join(parts, "; "))
}

// steadyCostNotes says what holding its works costs each management cluster in steady state:
// its agent's, kube-apiserver's and etcd's CPU at cp over the same at idle (the region with no
// cluster), per 1,000 works of its shard, with the agent's status-sync interval.
func steadyCostNotes(idle, cp *checkpoint, intervals map[string]time.Duration) []string {
	var notes []string
	for _, shard := range sortedKeys(cp.Shards) {
		works := float64(cp.Shards[shard])
		if works == 0 {
			continue
		}
		interval := intervals[shard]
		if interval == 0 {
			interval = 10 * time.Second // the agent's default (mgmtcluster.MaestroAgentOptions)
		}
		var parts []string
		total := 0.0
		for _, g := range []string{"maestro agent " + shard, "kube-apiserver " + shard, "etcd " + shard} {
			d := cp.SteadyCPU[g] - idle.SteadyCPU[g]
			total += d
			parts = append(parts, fmt.Sprintf("%s %.1f (idle %.1f)", g, cp.SteadyCPU[g], idle.SteadyCPU[g]))
		}
		notes = append(notes, fmt.Sprintf("%s, %d works, --status-sync-interval %s: %s %% of one core; above idle %.1f %% in all, %.1f %% per 1,000 works",
			shard, cp.Shards[shard], interval, strings.Join(parts, ", "), total, total/works*1000))
	}
	return notes
}

// findAgent finds the running Maestro agent of consumer among this process's descendants.
func findAgent(consumer string) (int, []string, string, error) {
	procs, err := regionProcesses()
	if err != nil {
		return 0, nil, "", err
	}
	for _, p := range procs {
		if p.Name != "maestro agent "+consumer {
			continue
		}
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID))
		if err != nil {
			return 0, nil, "", err
		}
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", p.PID))
		if err != nil {
			return 0, nil, "", err
		}
		return p.PID, strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00"), cwd, nil
	}
	return 0, nil, "", fmt.Errorf("no maestro agent of %s running", consumer)
}

// clusterBody is a valid create body (armclient.ClusterBody), for a status-only hosted cluster.
func clusterBody(location, sub, rg string) map[string]any {
	return armclient.ClusterBody(location, sub, rg, map[string]string{"purpose": "p5-scale"})
}
