package monitor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/logattr"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// ClusterService is what the Monitor reads from Cluster Service, the owner of the cluster model
// and of the status it observed through Maestro. Only list calls: the Monitor never writes.
type ClusterService interface {
	ListClusters(ctx context.Context, in *csv1.ListClustersRequest, opts ...grpc.CallOption) (*csv1.ListClustersResponse, error)
}

// NodePools lists a cluster's node pools.
type NodePools interface {
	ListNodePools(ctx context.Context, in *csv1.ListNodePoolsRequest, opts ...grpc.CallOption) (*csv1.ListNodePoolsResponse, error)
}

// Shards lists the provision shards (management clusters) with their capacity and load.
type Shards interface {
	ListShards(ctx context.Context, in *csv1.ListShardsRequest, opts ...grpc.CallOption) (*csv1.ListShardsResponse, error)
}

// Probe actively checks one shard's feedback path (its kube-apiserver's /readyz); nil error
// means it answered ready.
type Probe func(ctx context.Context) error

// ReadyzProbe GETs url with client and wants 200: the kube-apiserver's /readyz.
func ReadyzProbe(client *http.Client, url string) Probe {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("GET %s: %w", url, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return nil
	}
}

// NewReadyzProbe is ReadyzProbe over TLS with files (the shard's CA, and a client certificate of
// it), as --shard-probe configures it.
func NewReadyzProbe(rawURL string, files tlsconfig.Files) (Probe, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("probe URL %q: want https://host:port/readyz", rawURL)
	}
	// tlsconfig checks the server's name against the address's host, not the URL.
	cfg, err := files.Client(u.Host)
	if err != nil {
		return nil, fmt.Errorf("probe %s: %w", rawURL, err)
	}
	return ReadyzProbe(&http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}, rawURL), nil
}

// Owner says whether this replica checks a name now (Sharer.Owns).
type Owner interface {
	Owns(name string) bool
}

// CheckerConfig wires a Checker.
type CheckerConfig struct {
	Clusters  ClusterService
	NodePools NodePools
	Shards    Shards
	// Probes are the active probes of the shards that have one, by shard name. A shard without
	// one is judged on Cluster Service's observations alone.
	Probes map[string]Probe
	// HostedProbe, when set, checks the hosted kube-apiserver (status.api_url) of each owned
	// cluster where one should answer (hostedAPIServerExpected) every pass.
	HostedProbe HostedProbe
	Owner       Owner
	Limits      Limits
	// ProbeTimeout bounds one probe (default 5s).
	ProbeTimeout time.Duration
	Metrics      *Metrics
	Log          *slog.Logger
	// Now is the clock (default time.Now); tests of the SLOs move it.
	Now func() time.Time
	// Reports, when set, receives each owned cluster's verdict as a health document
	// (internal/healthdoc) for the admin API and hcpctl; Replica names the writer.
	Reports docstore.Store
	Replica string
}

// ShardKey is the name a shard is shared under, apart from cluster IDs.
func ShardKey(shard string) string { return "shard/" + shard }

// ClusterReport is the Monitor's latest verdict on one cluster, as the admin API shows it.
type ClusterReport struct {
	ClusterID   string           `json:"clusterId"`
	Shard       string           `json:"shard"`
	Verdict     Verdict          `json:"verdict"`
	NodePools   []NodePoolReport `json:"nodePools,omitempty"`
	CheckedAt   time.Time        `json:"checkedAt"`
	FeedbackAge string           `json:"feedbackAge,omitempty"`
}

// NodePoolReport is the verdict on one node pool.
type NodePoolReport struct {
	ID      string  `json:"id"`
	Verdict Verdict `json:"verdict"`
}

// Checker runs check passes over the part of the fleet this replica owns.
type Checker struct {
	cfg CheckerConfig

	mu sync.Mutex
	// lastOK is when each shard's probe last answered ready (by this replica's clock); a shard
	// probed for the first time counts from the Checker's start.
	lastOK  map[string]time.Time
	started time.Time
	reports map[string]ClusterReport
	written map[string]written
	// swept is when this replica last swept health documents of deleted clusters.
	swept time.Time
}

// NewChecker returns a Checker.
func NewChecker(cfg CheckerConfig) *Checker {
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = 5 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Limits = cfg.Limits.WithDefaults()
	return &Checker{cfg: cfg, lastOK: map[string]time.Time{}, started: cfg.Now(), reports: map[string]ClusterReport{}, written: map[string]written{}}
}

// Report returns the latest verdict on a cluster this replica checked, if any.
func (c *Checker) Report(clusterID string) (ClusterReport, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.reports[clusterID]
	return r, ok
}

// Pass checks every shard and every cluster and node pool this replica owns once, and replaces
// the exported metrics with what it found.
func (c *Checker) Pass(ctx context.Context) error {
	var failed []error
	shards, err := c.cfg.Shards.ListShards(ctx, &csv1.ListShardsRequest{})
	if err != nil {
		c.cfg.Metrics.checkFailed("list_shards")
		return fmt.Errorf("list shards: %w", err)
	}
	now := c.cfg.Now()
	snap := newSnapshot()
	// Every replica probes every shard (there are few), since its clusters' verdicts depend on
	// them; only the shard's owner exports the shard's series.
	feedbackAge := map[string]time.Duration{}
	for _, sh := range shards.GetShards() {
		age := c.probe(ctx, sh.GetName(), now)
		feedbackAge[sh.GetName()] = age
		if c.cfg.Owner.Owns(ShardKey(sh.GetName())) {
			snap.shards[sh.GetName()] = shardSample{max: sh.GetMaxClusters(), count: sh.GetClusterCount(), feedbackAge: age, probed: c.cfg.Probes[sh.GetName()] != nil}
		}
	}
	clusters, err := c.listClusters(ctx)
	if err != nil {
		c.cfg.Metrics.checkFailed("list_clusters")
		return err
	}
	hosted := c.probeAllHosted(ctx, clusters)
	reports := map[string]ClusterReport{}
	for _, cl := range clusters {
		if !c.cfg.Owner.Owns(cl.GetId()) {
			continue
		}
		shard := cl.GetShard()
		age := feedbackAge[shard]
		phase := ClusterPhase(cl.GetStatus().GetState())
		hostedErr, probed := hosted[cl.GetId()]
		if probed {
			result := "up"
			if hostedErr != "" {
				result = "down"
			}
			snap.hosted[hostedKey{shard, result}]++
		}
		v := Decide(Observation{Phase: phase, Conditions: cl.GetStatus().GetConditions(),
			Since: cl.GetUpdateTime().AsTime(), FeedbackAge: age, LastFeedback: lastFeedback(cl), HostedAPIServerErr: hostedErr}, now, c.cfg.Limits)
		rep := ClusterReport{ClusterID: cl.GetId(), Shard: shard, Verdict: v, CheckedAt: now}
		if age > 0 {
			rep.FeedbackAge = age.Round(time.Second).String()
		}
		snap.clusters[key{shard, v.Health}]++
		snap.info = append(snap.info, infoSample{cluster: cl.GetId(), shard: shard, health: v.Health})
		pools, err := c.cfg.NodePools.ListNodePools(ctx, &csv1.ListNodePoolsRequest{ClusterId: cl.GetId()})
		if err != nil {
			c.cfg.Metrics.checkFailed("list_node_pools")
			failed = append(failed, fmt.Errorf("list node pools of %s: %w", cl.GetId(), err))
		}
		for _, np := range pools.GetNodePools() {
			nv := Decide(Observation{Phase: NodePoolPhase(np.GetStatus().GetState()), Conditions: np.GetStatus().GetConditions(),
				Since: np.GetUpdateTime().AsTime(), FeedbackAge: age}, now, c.cfg.Limits)
			snap.nodePools[key{shard, nv.Health}]++
			rep.NodePools = append(rep.NodePools, NodePoolReport{ID: np.GetId(), Verdict: nv})
		}
		reports[cl.GetId()] = rep
		if err := c.writeReport(ctx, rep); err != nil {
			c.cfg.Metrics.checkFailed("write_health")
			failed = append(failed, err)
		}
	}
	if err := c.sweep(ctx, clusters, now); err != nil {
		c.cfg.Metrics.checkFailed("sweep_health")
		failed = append(failed, err)
	}
	sort.Slice(snap.info, func(i, j int) bool { return snap.info[i].cluster < snap.info[j].cluster })
	c.mu.Lock()
	c.reports = reports
	c.mu.Unlock()
	c.cfg.Metrics.publish(snap)
	return errors.Join(failed...)
}

// probe runs the shard's probe, if it has one, and returns how long its feedback path has not
// been seen working: 0 when it answers now or has no probe.
func (c *Checker) probe(ctx context.Context, shard string, now time.Time) time.Duration {
	p := c.cfg.Probes[shard]
	if p == nil {
		return 0
	}
	pctx, cancel := context.WithTimeout(ctx, c.cfg.ProbeTimeout)
	err := p(pctx)
	cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.lastOK[shard] = now
		return 0
	}
	c.cfg.Metrics.checkFailed("shard_readyz")
	c.cfg.Log.Warn("shard probe failed", "shard", shard, "error", err)
	last, ok := c.lastOK[shard]
	if !ok {
		last = c.started
	}
	return now.Sub(last)
}

// hostedProbesInFlight bounds the hosted kube-apiserver probes a pass runs at once. They run side
// by side so that hung endpoints do not add up: a pass takes about ProbeTimeout for every
// hostedProbesInFlight of them, not ProbeTimeout for each.
const hostedProbesInFlight = 32

// probeAllHosted probes the hosted kube-apiserver of every owned cluster where one should answer
// (hostedAPIServerExpected), up to hostedProbesInFlight at once, and returns why each failed, or
// "", by cluster ID; a cluster not probed is absent.
func (c *Checker) probeAllHosted(ctx context.Context, clusters []*csv1.Cluster) map[string]string {
	out := map[string]string{}
	if c.cfg.HostedProbe == nil {
		return out
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, hostedProbesInFlight)
	for _, cl := range clusters {
		if !c.cfg.Owner.Owns(cl.GetId()) || !hostedAPIServerExpected(cl.GetStatus()) {
			continue
		}
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			res := c.probeHosted(ctx, cl)
			mu.Lock()
			out[cl.GetId()] = res
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// probeHosted probes a cluster's hosted kube-apiserver and returns why it failed, or "".
func (c *Checker) probeHosted(ctx context.Context, cl *csv1.Cluster) string {
	pctx, cancel := context.WithTimeout(ctx, c.cfg.ProbeTimeout)
	defer cancel()
	err := c.cfg.HostedProbe(pctx, cl.GetStatus().GetApiUrl())
	if err == nil {
		return ""
	}
	c.cfg.Metrics.checkFailed("hosted_apiserver")
	c.cfg.Log.Warn("hosted apiserver probe failed", logattr.ClusterID(cl.GetId()), "shard", cl.GetShard(), "error", err)
	return err.Error()
}

func (c *Checker) listClusters(ctx context.Context) ([]*csv1.Cluster, error) {
	var out []*csv1.Cluster
	req := &csv1.ListClustersRequest{PageSize: 500}
	for {
		resp, err := c.cfg.Clusters.ListClusters(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("list clusters: %w", err)
		}
		out = append(out, resp.GetClusters()...)
		if resp.GetNextPageToken() == "" {
			return out, nil
		}
		req.PageToken = resp.GetNextPageToken()
	}
}

// lastFeedback is cl's last feedback for Decide: its feedback_time; zero while Cluster Service
// has recorded none (one without the heartbeat, or before the heartbeat's first answer) and
// while it is on no shard, so such a cluster is not judged on its own feedback. Judging it on
// another time (its status's update_time) would call every steady cluster stale whenever the
// heartbeat is not running.
func lastFeedback(cl *csv1.Cluster) time.Time {
	if cl.GetShard() == "" || cl.GetStatus().GetFeedbackTime() == nil {
		return time.Time{}
	}
	return cl.GetStatus().GetFeedbackTime().AsTime()
}
