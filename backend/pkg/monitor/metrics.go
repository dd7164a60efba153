package monitor

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names. Every series is per shard and per verdict at most, except monitor_cluster_info,
// the one series per cluster; a replica exports only what it owns, so PromQL sums across
// replicas without counting anything twice.
var (
	descClusters = prometheus.NewDesc("monitor_clusters",
		"Hosted clusters this replica checks, by shard and health verdict.", []string{"shard", "health"}, nil)
	descNodePools = prometheus.NewDesc("monitor_node_pools",
		"Node pools this replica checks, by shard and health verdict.", []string{"shard", "health"}, nil)
	descInfo = prometheus.NewDesc("monitor_cluster_info",
		"1 for each hosted cluster this replica checks, with its shard and health verdict.", []string{"cluster_id", "shard", "health"}, nil)
	descFeedbackAge = prometheus.NewDesc("monitor_shard_feedback_age_seconds",
		"Seconds since the shard's feedback path (its kube-apiserver /readyz) was last seen working; 0 while it works.", []string{"shard"}, nil)
	descShardMax = prometheus.NewDesc("monitor_shard_max_clusters",
		"The shard's capacity in hosted clusters, as Cluster Service places them.", []string{"shard"}, nil)
	descShardCount = prometheus.NewDesc("monitor_shard_clusters",
		"Hosted clusters placed on the shard.", []string{"shard"}, nil)
	descHosted = prometheus.NewDesc("monitor_hosted_apiservers",
		"Hosted kube-apiservers of ready clusters this replica probed in its last pass, by shard and result (up, down).", []string{"shard", "result"}, nil)
	descShardProbed = prometheus.NewDesc("monitor_shard_probed",
		"1 if this replica actively probes the shard, 0 if it has no probe for it.", []string{"shard"}, nil)
)

type key struct {
	shard  string
	health Health
}

type hostedKey struct {
	shard, result string
}

type shardSample struct {
	max, count  int32
	feedbackAge time.Duration
	probed      bool
}

type infoSample struct {
	cluster, shard string
	health         Health
}

// snapshot is one pass's findings, published whole so a scrape never sees half a pass.
type snapshot struct {
	clusters  map[key]int
	nodePools map[key]int
	shards    map[string]shardSample
	hosted    map[hostedKey]int
	info      []infoSample
}

func newSnapshot() *snapshot {
	return &snapshot{clusters: map[key]int{}, nodePools: map[key]int{}, shards: map[string]shardSample{}, hosted: map[hostedKey]int{}}
}

// Metrics exports the Monitor's findings. A nil *Metrics records nothing.
type Metrics struct {
	mu   sync.Mutex
	snap *snapshot

	checksFailed *prometheus.CounterVec
	passes       prometheus.Counter
	bucketsHeld  prometheus.GaugeFunc
	buckets      prometheus.Gauge
	lastPass     prometheus.Gauge
}

// NewMetrics registers the Monitor's metrics on reg. held reports how many buckets this replica
// holds now; total is the configured number of buckets.
func NewMetrics(reg prometheus.Registerer, held func() int, total int) *Metrics {
	m := &Metrics{snap: newSnapshot(),
		checksFailed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "monitor_checks_failed_total",
			Help: "Checks that failed, by check (shard_readyz, hosted_apiserver, list_shards, list_clusters, list_node_pools, write_health, sweep_health)."}, []string{"check"}),
		passes: prometheus.NewCounter(prometheus.CounterOpts{Name: "monitor_passes_total", Help: "Check passes this replica completed."}),
		bucketsHeld: prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "monitor_buckets_held",
			Help: "Fleet buckets this replica holds the lease of, and so checks."}, func() float64 { return float64(held()) }),
		buckets: prometheus.NewGauge(prometheus.GaugeOpts{Name: "monitor_buckets", Help: "Buckets the fleet is cut into; every bucket should be held by one replica."}),
		lastPass: prometheus.NewGauge(prometheus.GaugeOpts{Name: "monitor_last_pass_timestamp_seconds",
			Help: "Unix time this replica last completed a check pass."}),
	}
	m.buckets.Set(float64(total))
	for _, c := range []string{"shard_readyz", "hosted_apiserver", "list_shards", "list_clusters", "list_node_pools", "write_health", "sweep_health"} {
		m.checksFailed.WithLabelValues(c)
	}
	reg.MustRegister(m, m.checksFailed, m.passes, m.bucketsHeld, m.buckets, m.lastPass)
	return m
}

func (m *Metrics) checkFailed(check string) {
	if m != nil {
		m.checksFailed.WithLabelValues(check).Inc()
	}
}

func (m *Metrics) publish(s *snapshot) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.snap = s
	m.mu.Unlock()
	m.passes.Inc()
	m.lastPass.SetToCurrentTime()
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descClusters, descNodePools, descInfo, descFeedbackAge, descShardMax, descShardCount, descShardProbed, descHosted} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the last published pass.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	s := m.snap
	m.mu.Unlock()
	for k, n := range s.clusters {
		ch <- prometheus.MustNewConstMetric(descClusters, prometheus.GaugeValue, float64(n), k.shard, string(k.health))
	}
	for k, n := range s.nodePools {
		ch <- prometheus.MustNewConstMetric(descNodePools, prometheus.GaugeValue, float64(n), k.shard, string(k.health))
	}
	for k, n := range s.hosted {
		ch <- prometheus.MustNewConstMetric(descHosted, prometheus.GaugeValue, float64(n), k.shard, k.result)
	}
	for _, i := range s.info {
		ch <- prometheus.MustNewConstMetric(descInfo, prometheus.GaugeValue, 1, i.cluster, i.shard, string(i.health))
	}
	for name, sh := range s.shards {
		ch <- prometheus.MustNewConstMetric(descFeedbackAge, prometheus.GaugeValue, sh.feedbackAge.Seconds(), name)
		ch <- prometheus.MustNewConstMetric(descShardMax, prometheus.GaugeValue, float64(sh.max), name)
		ch <- prometheus.MustNewConstMetric(descShardCount, prometheus.GaugeValue, float64(sh.count), name)
		probed := 0.0
		if sh.probed {
			probed = 1
		}
		ch <- prometheus.MustNewConstMetric(descShardProbed, prometheus.GaugeValue, probed, name)
	}
}
