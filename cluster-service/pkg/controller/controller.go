// Package controller drives every cluster from the database to its management cluster and
// back: it places clusters, applies their ManifestWork through Maestro, follows the work's status
// feedback (watch per shard plus periodic resync) into the stored status, and finishes deletions.
// It is level-triggered: each reconcile reads the stored cluster and Maestro's work and writes
// the difference, so a restart at any point simply reconciles again.
package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/maestro"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/cluster-service/pkg/placement"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/cluster-service/pkg/versions"
	"github.com/openhcp/openhcp/internal/backoff"
	"github.com/openhcp/openhcp/internal/reconcile"
	"github.com/openhcp/openhcp/internal/secretseal"
)

// WorkClient is what the controller needs from Maestro; *maestro.Client implements it. Get
// returns a Kubernetes NotFound error when the work does not exist.
type WorkClient interface {
	Apply(ctx context.Context, consumer string, work *workv1.ManifestWork) error
	Delete(ctx context.Context, consumer, name string) error
	Get(ctx context.Context, consumer, name string) (*workv1.ManifestWork, error)
	// Republish sends a work again unchanged, as a new generation (see republish.go).
	Republish(ctx context.Context, consumer, name string) (int64, error)
	Watch(ctx context.Context, consumer string) (<-chan maestro.WorkEvent, error)
}

var _ WorkClient = (*maestro.Client)(nil)

// SealingKeys finds a management cluster's sealing key; nil and no error when it has none.
type SealingKeys interface {
	PublicKey(consumer string) (*secretseal.PublicKey, error)
}

// Config tunes the controller; zero values take the defaults.
type Config struct {
	Manifests manifests.Config
	// Policy places clusters that have no shard yet; default least-loaded.
	Policy placement.Policy
	// ResyncPeriod: every cluster is reconciled at least this often (Get from Maestro), and the
	// shard list is re-read; default 5m.
	ResyncPeriod time.Duration
	// DeletePollPeriod: how often a deleting cluster's work is checked besides watch events;
	// default 10s.
	DeletePollPeriod time.Duration
	// Workers reconcile in parallel; default 4.
	Workers int
	// TombstoneRetention: DELETED events older than this are pruned at each resync; a watcher
	// further behind must start over from a snapshot. Default 7 days.
	TombstoneRetention time.Duration
	// Registerer for the controller's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Versions re-checks an upgrade's edge before it is scheduled; nil skips the check.
	Versions *versions.Catalogue
	// Now is the clock of upgrade schedules; default time.Now.
	Now func() time.Time
	// PollFeedbackOnly turns watched status feedback off: every work asks the agent to poll
	// (withFeedbackMode). A benchmark and ops knob (--feedback-watch=false), to measure the
	// watched mode against its baseline or to shed agent informers; default false.
	PollFeedbackOnly bool
	// SealingKeys gives each management cluster's sealing key (secretseal.KeyDir): a
	// cluster's work then carries its pull secret and etcd key sealed to the key of the
	// management cluster it is placed on. Nil, or no key for that management cluster, sends
	// them in clear (docs/security.md, "Secrets in Maestro's database").
	SealingKeys SealingKeys
	// ReadSecretsLive leaves a cluster's secrets polled while its HostedCluster is watched
	// (manifests.Cluster.ReadSecretsLive): the rule before 2026-11-25, a benchmark's baseline
	// (--watch-secrets=false); default false.
	ReadSecretsLive bool
	// PollAfterSteady is how long a work keeps watched feedback once its cluster or node pool
	// is READY again: then a reconcile sends it back with Poll (withFeedbackMode), so the agent
	// drops its informer. Without it the switch waited for the next event or resync (up to
	// ResyncPeriod), and a busy shard could run into the agent's --max-feedback-watch. Waiting
	// a little keeps the switch (one more work update and its status events) off the status
	// path while a batch of creates is in flight, and spares it when an update follows at once.
	// Default 30s.
	PollAfterSteady time.Duration
	// RepublishAfter: a work whose status Maestro still has for an older generation this long
	// after the controller first saw it behind is sent again (republish.go); the wait doubles
	// with each republish of the same work, up to 10 minutes. Default DefaultRepublishAfter.
	RepublishAfter time.Duration
	// FixedRepublishWait applies RepublishAfter as it is to every work, a never-reported one
	// too, instead of adapting the wait to the agent (republish.go). The rule before
	// 2026-11-23, kept as a benchmark's baseline (--republish-adaptive=false); default false.
	FixedRepublishWait bool
	// StaleStatusAfter: a cluster or node pool that is not READY or ERROR while Maestro's status
	// of its work has not changed for this long has its work sent again, so that the agent
	// reports afresh a status the pinned Maestro server lost (stalestatus.go); the wait doubles
	// with each republish of the same episode, up to 10 minutes. Default DefaultStaleStatusAfter.
	StaleStatusAfter time.Duration
	// StatusFromMaestroOnly reads every work's status back from Maestro's REST API after each
	// status event, instead of taking it from the event once (observed.go). The rule before
	// 2026-11-24, kept as a benchmark's baseline (--status-from-watch=false); default false.
	StatusFromMaestroOnly bool
	// StatusEventsInOrder queues the reconcile caused by a work's status event behind every
	// other queued cluster and node pool, instead of ahead of them (watchShard). The rule before
	// 2026-11-24, kept as a benchmark's baseline (--status-events-first=false); default false.
	StatusEventsInOrder bool
	// ResyncAtOnce queues every cluster and node pool at each resync tick at once. Without it a
	// tick's keys are spread evenly over ResyncPeriod (spreadAdds), so the sweep's Maestro
	// reads do not arrive as one burst every period (at 3,929 clusters a burst kept the
	// Maestro servers at half a core; docs/performance.md). The sweep at start-up is always at
	// once. The rule before 2026-11-25, kept as a benchmark's baseline (--resync-spread=false);
	// default false.
	ResyncAtOnce bool
	// FeedbackHeartbeat: a READY or ERROR cluster whose last feedback (the first status seen
	// for its work's current generation) is this old has its work sent again, so that the
	// agent reports on a new generation and the cluster's feedback_time moves (heartbeat.go).
	// 0 sends none; the --feedback-heartbeat flag's default is DefaultFeedbackHeartbeat.
	FeedbackHeartbeat time.Duration
}

// Controller is the cluster reconciler.
type Controller struct {
	st    *store.Store
	works WorkClient
	cfg   Config
	log   *slog.Logger
	queue *reconcile.Queue[string]

	// unsealed holds the management clusters already logged as having no sealing key.
	unsealed sync.Map

	mu sync.Mutex
	// applied remembers the spec hash last applied per cluster in this process, so an unchanged
	// work is not re-sent on every reconcile. After a restart it is empty: everything is
	// applied once more, which Maestro treats as a no-op.
	applied map[string]string
	// steady remembers, per key, the hash of the steady (polled-feedback) form of the spec last
	// applied, to tell a new spec (a transition starting) from a change of feedback mode only.
	steady map[string]string
	// written remembers the revision of our own last status write per cluster, so the store
	// event it causes does not trigger a needless reconcile.
	written map[string]int64
	watches map[string]context.CancelFunc
	// lag remembers, per key, a work whose status is behind its generation (republish.go).
	// After a restart it is empty: a work still behind is republished RepublishAfter after
	// the first reconcile sees it.
	lag map[string]lagState
	// stale remembers, per key, the work status of an object not settled yet (stalestatus.go);
	// empty after a restart, which only restarts its clock.
	stale map[string]staleState
	// refused remembers, per key, the work Maestro last refused as invalid (refused.go); empty
	// after a restart, which sends that work once more.
	refused map[string]refusedWork
	// reports remembers, per shard, how long its agent took to report on recent generations
	// (republish.go); empty after a restart.
	reports map[string]*reportTimes
	// observed is the latest status event of every watched work (observed.go).
	observed *observedWorks
	// built is the work last built per cluster and feedback mode (clusterwork.go).
	built *builtWorks

	reconciles *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	depth      prometheus.GaugeFunc
	// republishes counts works sent again because the agent had not reported on their spec.
	republishes      *prometheus.CounterVec
	staleRepublishes *prometheus.CounterVec
	// waits is each shard's current wait before a first republish (republish.go).
	waits *prometheus.GaugeVec
	// statusReads counts the works' statuses a reconcile used, by where they came from.
	statusReads *prometheus.CounterVec
	// workBuilds counts works built (encoded, hashed and decoded), by kind.
	workBuilds *prometheus.CounterVec
	// heartbeats counts works sent again by the feedback heartbeat (heartbeat.go).
	heartbeats prometheus.Counter
}

// retryBackoff is the wait before a failed reconcile of a cluster, node pool, credential or
// revocation is retried: 200ms doubling to 1 minute.
func retryBackoff() reconcile.Backoff {
	return reconcile.Backoff{Base: 200 * time.Millisecond, Max: time.Minute}
}

// New makes a controller; Run starts it.
func New(st *store.Store, works WorkClient, cfg Config, log *slog.Logger) *Controller {
	if cfg.Policy == nil {
		cfg.Policy = placement.LeastLoaded{}
	}
	if cfg.ResyncPeriod <= 0 {
		cfg.ResyncPeriod = 5 * time.Minute
	}
	if cfg.DeletePollPeriod <= 0 {
		cfg.DeletePollPeriod = 10 * time.Second
	}
	if cfg.PollAfterSteady <= 0 {
		cfg.PollAfterSteady = 30 * time.Second
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.RepublishAfter <= 0 {
		cfg.RepublishAfter = DefaultRepublishAfter
	}
	if cfg.StaleStatusAfter <= 0 {
		cfg.StaleStatusAfter = DefaultStaleStatusAfter
	}
	if cfg.TombstoneRetention <= 0 {
		cfg.TombstoneRetention = 7 * 24 * time.Hour
	}
	if log == nil {
		log = slog.Default()
	}
	c := &Controller{
		st: st, works: works, cfg: cfg, log: log.With("component", "cluster-controller"),
		queue:    reconcile.NewQueue[string](retryBackoff()),
		applied:  map[string]string{},
		steady:   map[string]string{},
		written:  map[string]int64{},
		watches:  map[string]context.CancelFunc{},
		lag:      map[string]lagState{},
		stale:    map[string]staleState{},
		refused:  map[string]refusedWork{},
		reports:  map[string]*reportTimes{},
		observed: newObservedWorks(),
		built:    newBuiltWorks(),
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cluster_service_reconciles_total", Help: "Reconciles by kind (cluster, node_pool) and outcome (ok, requeue, error).",
		}, []string{"kind", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "cluster_service_reconcile_duration_seconds", Help: "Duration of one reconcile, by kind (cluster, node_pool) and outcome.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}, []string{"kind", "outcome"}),
		republishes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cluster_service_maestro_republishes_total",
			Help: "Works sent again because the Maestro agent had not reported on their current spec in time, by kind (cluster, node_pool); each is a spec update the pinned agent lost, or an agent slower than RepublishAfter.",
		}, []string{"kind"}),
		staleRepublishes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cluster_service_maestro_stale_status_republishes_total",
			Help: "Works sent again because their object was not settled while their Maestro status had not changed for --stale-status-after, by kind (cluster, node_pool); each is a status the pinned Maestro server lost, or an object slower than that.",
		}, []string{"kind"}),
		waits: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cluster_service_maestro_republish_wait_seconds",
			Help: "Per shard, how long a work whose status is behind its generation waits before its first republish: --republish-after, or 2x the agent's slowest recent report (--republish-adaptive); 4x that for a work never reported on.",
		}, []string{"shard"}),
		statusReads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cluster_service_work_status_reads_total",
			Help: "Work statuses a reconcile used, by source: watch (taken from the status event Maestro streamed, no request) or maestro (read from Maestro's REST API).",
		}, []string{"source"}),
		workBuilds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cluster_service_work_builds_total",
			Help: "Works built from the stored spec (manifests encoded, the spec hashed, the HostedCluster decoded back), by kind (cluster).",
		}, []string{"kind"}),
		heartbeats: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cluster_service_feedback_heartbeats_total",
			Help: "Cluster works sent again by the feedback heartbeat: a READY or ERROR cluster whose last feedback was older than --feedback-heartbeat.",
		}),
	}
	c.depth = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "cluster_service_reconcile_queue_depth", Help: "Clusters and node pools waiting to be reconciled.",
	}, func() float64 { return float64(c.queue.Len()) })
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(c.reconciles, c.duration, c.depth, c.republishes, c.staleRepublishes, c.waits, c.statusReads, c.workBuilds, c.heartbeats)
	}
	return c
}

// Run reconciles until ctx ends. It starts with every cluster in the database, then follows
// the store's change feed, the Maestro watch of every shard, and the resync timer.
func (c *Controller) Run(ctx context.Context) error {
	defer startWorkers(ctx, c.cfg.Workers, c.processNext, c.queue.ShutDown)()

	rev, err := c.st.CurrentRevision(ctx)
	if err != nil {
		return fmt.Errorf("controller: read current revision: %w", err)
	}
	poolRev, err := c.st.NodePools().CurrentRevision(ctx)
	if err != nil {
		return fmt.Errorf("controller: read current node pool revision: %w", err)
	}
	authRev, err := c.st.ExternalAuths().CurrentRevision(ctx)
	if err != nil {
		return fmt.Errorf("controller: read current external auth revision: %w", err)
	}
	// One feed per event log, so a write wakes the one follow that reads its log.
	clusters, stopClusters := c.st.Changes()
	defer stopClusters()
	pools, stopPools := c.st.NodePools().Changes()
	defer stopPools()
	auths, stopAuths := c.st.ExternalAuths().Changes()
	defer stopAuths()
	c.resync(ctx, 0)
	ticker := time.NewTicker(c.cfg.ResyncPeriod)
	defer ticker.Stop()
	spread := c.cfg.ResyncPeriod
	if c.cfg.ResyncAtOnce {
		spread = 0
	}
	for {
		select {
		case <-ctx.Done():
			c.stopWatches()
			return nil
		case <-ticker.C:
			c.resync(ctx, spread)
		case <-clusters:
			rev = c.followStore(ctx, rev)
		case <-pools:
			poolRev = c.followNodePools(ctx, poolRev)
		case <-auths:
			authRev = c.followExternalAuths(ctx, authRev)
		}
	}
}

// startWorkers runs n workers that each call processNext until it reports false, which it does
// once the queue is shut down. The returned stop shuts the queue down and waits for the workers.
func startWorkers(ctx context.Context, n int, processNext func(context.Context) bool, shutDown func()) (stop func()) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for processNext(ctx) {
			}
		}()
	}
	return func() {
		shutDown()
		wg.Wait()
	}
}

// resync enqueues every cluster and node pool, spread evenly over spread (0: at once), makes
// sure every shard is watched and prunes old tombstones.
func (c *Controller) resync(ctx context.Context, spread time.Duration) {
	if n, err := c.st.PruneTombstones(ctx, time.Now().Add(-c.cfg.TombstoneRetention)); err != nil {
		c.log.Error("resync: prune tombstones", "error", err)
	} else if n > 0 {
		c.log.Info("pruned cluster tombstones", "count", n, "retention", c.cfg.TombstoneRetention)
	}
	shards, err := c.st.ListShards(ctx)
	if err != nil {
		c.log.Error("resync: list shards", "error", err)
	}
	for _, sh := range shards {
		c.ensureWatch(ctx, sh.Name)
	}
	var keys []string
	after := ""
	for {
		cs, err := c.st.ListClusters(ctx, store.ListOptions{AfterID: after, Limit: 500})
		if err != nil {
			c.log.Error("resync: list clusters", "error", err)
			break
		}
		for _, cl := range cs {
			keys = append(keys, cl.ID)
		}
		if len(cs) < 500 {
			break
		}
		after = cs[len(cs)-1].ID
	}
	after = ""
	for {
		pools, err := c.st.NodePools().List(ctx, "", after, 500)
		if err != nil {
			c.log.Error("resync: list node pools", "error", err)
			break
		}
		for _, np := range pools {
			keys = append(keys, nodePoolKey(np.ID))
		}
		if len(pools) < 500 {
			break
		}
		after = pools[len(pools)-1].ID
	}
	spreadAdds(c.queue, keys, spread)
}

// spreadAdds queues keys over spread: the i-th of n after spread·i/n, so the first at once
// and the last just before spread has passed. With spread 0 every key is queued at once. A key
// already waiting for an earlier AddAfter keeps that time.
func spreadAdds(q *reconcile.Queue[string], keys []string, spread time.Duration) {
	for i, k := range keys {
		if spread <= 0 {
			q.Add(k)
			continue
		}
		q.AddAfter(k, spread*time.Duration(i)/time.Duration(len(keys)))
	}
}

// followStore enqueues clusters changed in the store after rev (new clusters, deletions, and
// writes by other replicas) and returns the last revision seen.
func (c *Controller) followStore(ctx context.Context, rev int64) int64 {
	return followEvents(ctx, c.log, "cluster", rev, c.st.EventsAfter, func(ev store.Event) int64 { return ev.Revision }, func(ev store.Event) {
		if ev.Type != csv1.EventType_EVENT_TYPE_UPSERTED {
			return
		}
		c.mu.Lock()
		own := c.written[ev.Cluster.ID] == ev.Revision
		c.mu.Unlock()
		if !own {
			c.queue.Add(ev.Cluster.ID)
		}
		if ev.Cluster.Shard != "" {
			c.ensureWatch(ctx, ev.Cluster.Shard)
		}
	})
}

// eventPage is how many store events one read of an event log takes.
const eventPage = 500

// followEvents reads one of the store's event logs after rev, a page at a time, hands each event
// to handle, and returns the last revision it saw. A failed read is logged and returns what was
// seen so far: the next change signal or resync reads on from there. Every controller follows
// its event log through it (clusters, node pools, external auths, break-glass).
func followEvents[E any](ctx context.Context, log *slog.Logger, what string, rev int64,
	read func(ctx context.Context, after int64, limit int) ([]E, error), revision func(E) int64, handle func(E)) int64 {
	for {
		evs, err := read(ctx, rev, eventPage)
		if err != nil {
			log.Error("read "+what+" events", "error", err, "after", rev)
			return rev
		}
		for _, ev := range evs {
			rev = revision(ev)
			handle(ev)
		}
		if len(evs) < eventPage {
			return rev
		}
	}
}

// ensureWatch keeps one Maestro watch per shard; it reconnects with backoff when it ends.
func (c *Controller) ensureWatch(ctx context.Context, shard string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.watches[shard]; ok {
		return
	}
	wctx, cancel := context.WithCancel(ctx)
	c.watches[shard] = cancel
	go c.watchShard(wctx, shard)
}

func (c *Controller) stopWatches() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cancel := range c.watches {
		cancel()
	}
}

func (c *Controller) watchShard(ctx context.Context, shard string) {
	log := c.log.With("shard", shard)
	backoff.Reconnect(ctx, backoff.Policy{Initial: 200 * time.Millisecond, Max: 30 * time.Second}, func(ctx context.Context) (bool, error) {
		events, err := c.works.Watch(ctx, shard)
		if err != nil {
			return false, err
		}
		// Events may have been missed since the last watch ended.
		c.observed.forgetShard(shard)
		for ev := range events {
			if ev.Work == nil {
				continue
			}
			c.observed.record(shard, ev)
			if id, ok := manifests.ClusterIDFromWorkName(ev.Work.Name); ok {
				c.addStatusChange(id)
			} else if id, ok := manifests.NodePoolIDFromWorkName(ev.Work.Name); ok {
				c.addStatusChange(nodePoolKey(id))
			}
		}
		return true, errors.New("watch ended")
	}, func(err error, wait time.Duration) {
		log.Warn("maestro watch failed; retrying", "error", err, "backoff", wait)
	})
}

// addStatusChange queues the reconcile of a key whose work's status changed. It goes ahead of
// the keys queued for other reasons (the queue's urgent lane): such a reconcile mostly takes the
// status from the event and writes it, in milliseconds, and it is what finishes a customer's
// operation, while a create's reconcile waits on Maestro for most of a second. Without this a
// batch of creates holds every finished transition behind it (docs/cluster-service.md).
func (c *Controller) addStatusChange(key string) {
	if c.cfg.StatusEventsInOrder {
		c.queue.Add(key)
		return
	}
	c.queue.AddUrgent(key)
}

// processNext reconciles the next queued cluster or node pool (reconcile.Process settles the
// result on the queue); it reports false once the queue is shut down.
func (c *Controller) processNext(ctx context.Context) bool {
	return reconcile.Process(ctx, c.queue, func(ctx context.Context, key string) (time.Duration, error) {
		if poolID, ok := nodePoolIDFromKey(key); ok {
			return c.ReconcileNodePool(ctx, poolID)
		}
		return c.Reconcile(ctx, key)
	}, func(r reconcile.Result[string]) {
		kind := "cluster"
		if _, ok := nodePoolIDFromKey(r.Key); ok {
			kind = "node_pool"
		}
		if r.Outcome == reconcile.OutcomeError {
			c.log.Warn("reconcile failed; backing off", "clusterID", r.Key, "error", r.Err, "retries", r.Retries)
		}
		c.reconciles.WithLabelValues(kind, string(r.Outcome)).Inc()
		c.duration.WithLabelValues(kind, string(r.Outcome)).Observe(r.Took.Seconds())
	})
}

// Reconcile brings one cluster one step closer to what its record says. It returns when to look
// again (0: only on the next event or resync) or an error to retry with backoff.
func (c *Controller) Reconcile(ctx context.Context, id string) (time.Duration, error) {
	cl, err := c.st.GetCluster(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		c.forget(id)
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("get cluster %s: %w", id, err)
	}
	log := c.log.With("clusterID", id, "shard", cl.Shard, "revision", cl.Revision)

	if cl.Deleting {
		return c.reconcileDelete(ctx, log, cl)
	}
	if cl.Shard == "" {
		placed, err := c.st.PlaceCluster(ctx, id, c.cfg.Policy)
		if status.Code(err) == codes.ResourceExhausted {
			msg := "Waiting for a management cluster with free capacity."
			if cl.Status.GetMessage() != msg {
				st := proto.Clone(cl.Status).(*csv1.ClusterStatus)
				st.State, st.Message = csv1.ClusterState_CLUSTER_STATE_PENDING, msg
				if _, err := c.writeStatus(ctx, cl, st); err != nil {
					return 0, err
				}
			}
			return 30 * time.Second, nil
		}
		if err != nil {
			return 0, fmt.Errorf("place cluster %s: %w", id, err)
		}
		log.Info("cluster placed", "shard", placed.Shard)
		cl = placed
	}

	var sealTo *secretseal.PublicKey
	if c.cfg.SealingKeys != nil {
		if sealTo, err = c.cfg.SealingKeys.PublicKey(cl.Shard); err != nil {
			return 0, fmt.Errorf("sealing key of %s for cluster %s: %w", cl.Shard, id, err)
		}
		if _, told := c.unsealed.LoadOrStore(cl.Shard, sealTo == nil); sealTo == nil && !told {
			log.Warn("no sealing key for the management cluster: its clusters' secrets travel in clear")
		}
	}
	ea, err := c.st.ClusterExternalAuth(ctx, cl.ID)
	if err != nil {
		return 0, fmt.Errorf("read external auth of cluster %s: %w", id, err)
	}
	work, steadyHash, err := c.withFeedbackMode(id, cl.Status.GetState() == csv1.ClusterState_CLUSTER_STATE_READY,
		func(watch bool) (*workv1.ManifestWork, error) {
			b, err := c.clusterWork(cl, ea, sealTo, watch)
			return b.work, err
		})
	if err != nil && !errors.As(err, new(errBuild)) {
		return 0, err
	}
	if err != nil {
		// The spec was validated at create; a build failure cannot fix itself by retrying.
		st := &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_ERROR, ErrorCode: "InvalidClusterSpec", Message: err.Error()}
		_, werr := c.writeStatus(ctx, cl, st)
		log.Error("cannot build manifests", "error", err)
		return 0, werr
	}
	hash := work.Annotations[manifests.AnnotationSpecHash]
	if hash == steadyHash {
		c.built.forgetWatched(id)
	}
	built, err := builtClusterWork{work: work}.hostedCluster()
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	sent := c.applied[id] == hash
	c.mu.Unlock()
	if !sent {
		refused, err := c.applyOrRefused(ctx, log, id, cl.Shard, hash, "cluster",
			"the cluster's image digest mirrors, or its external auth's claim mappings and validation rules", work)
		if err != nil {
			return 0, fmt.Errorf("apply work of cluster %s to %s: %w", id, cl.Shard, err)
		}
		if refused != nil {
			// Nothing to look at until the spec changes: its store event, or the resync, comes.
			return 0, c.writeClusterRefused(ctx, log, cl, ea, refused)
		}
		c.mu.Lock()
		c.applied[id], c.steady[id] = hash, steadyHash
		c.mu.Unlock()
		log.Info("manifest work applied", "work", work.Name, "feedback", manifests.FeedbackMode(work))
		if cl.Status.GetApplied() {
			// The pools' works carry part of the cluster's spec (the node drain timeout);
			// each rebuilds and applies only if its own hash changed.
			if _, err := c.enqueueNodePools(ctx, id); err != nil {
				return 0, err
			}
		}
	}

	got, err := c.readWork(ctx, cl.Shard, work.Name, hash)
	if apierrors.IsNotFound(err) {
		// Just sent and not stored yet, or removed behind our back: apply again next time.
		got = nil
		c.mu.Lock()
		delete(c.applied, id)
		c.mu.Unlock()
	} else if err != nil {
		return 0, fmt.Errorf("get work of cluster %s from %s: %w", id, cl.Shard, err)
	}
	st, err := DeriveClusterStatus(got, built, false)
	if err != nil {
		return 0, err
	}
	written := cl
	partial := partialReport(got, cl.Status.GetConditions(), st.GetConditions(), st.GetState() == csv1.ClusterState_CLUSTER_STATE_INSTALLING)
	if partial {
		log.Debug("work status without HostedCluster feedback; the stored status stands")
		st = proto.Clone(cl.Status).(*csv1.ClusterStatus)
	}
	if !partial {
		// A full status of the work's current generation is feedback (heartbeat.go). A partial
		// one is not written (a write would stamp observed_revision on the stored status); the
		// agent's full report for the same generation records it.
		carryFeedback(st, cl.Status)
		recordFeedback(st, got, c.now())
		if written, err = c.writeStatus(ctx, cl, st); err != nil {
			return 0, err
		}
	}
	_, wait, err := c.advanceUpgrade(ctx, log, written)
	if err != nil {
		return 0, err
	}
	if err := c.reconcileExternalAuth(ctx, log, &store.Cluster{ARMResourceID: cl.ARMResourceID, Status: st}, ea, got); err != nil {
		return 0, err
	}
	if st.Applied && !cl.Status.GetApplied() {
		// Node pools waiting for the cluster's namespace can go now.
		if _, err := c.enqueueNodePools(ctx, id); err != nil {
			return 0, err
		}
	}
	if got == nil {
		return c.cfg.DeletePollPeriod, nil // look again soon: the work should appear
	}
	recheck, err := c.repairClusterWork(ctx, log, id, cl.Shard, got, st, partial)
	if err != nil {
		return 0, err
	}
	return sooner(sooner(wait, recheck), c.pollWhenSteady(st.GetState() == csv1.ClusterState_CLUSTER_STATE_READY, hash, steadyHash)), nil
}

// repairClusterWork applies the rules that send the work got of cluster id on shard again
// (repairWork's, then the feedback heartbeat) with st, the cluster's status as this reconcile
// has it (partial: from a report without HostedCluster feedback), and returns when to look
// again (0: no need).
func (c *Controller) repairClusterWork(ctx context.Context, log *slog.Logger, id, shard string, got *workv1.ManifestWork, st *csv1.ClusterStatus, partial bool) (time.Duration, error) {
	settled := settledState(st.GetState())
	recheck, done, err := c.repairWork(ctx, log, "cluster", id, shard, got, settled)
	if err != nil {
		return 0, err
	}
	// A partial report (an agent that has just restarted) recorded no feedback, so the stored
	// one may be past due although the agent answers: no heartbeat on it, or every such answer
	// would be republished at once; the agent's full report comes without one. Nor when got
	// may no longer be acted on (repairWork): a work the agent has just reported on records
	// its feedback in the next reconcile, and a heartbeat now would be a needless generation.
	beatRecheck, err := c.feedbackHeartbeat(ctx, log, id, shard, got, st, settled && !partial, done)
	if err != nil {
		return 0, err
	}
	return sooner(recheck, beatRecheck), nil
}

// pollWhenSteady is when to reconcile again to send a READY object's work back with polled
// feedback (Config.PollAfterSteady): only while the work last built still asks for Watch, that
// is while its hash is not the steady form's; 0 otherwise.
func (c *Controller) pollWhenSteady(ready bool, hash, steadyHash string) time.Duration {
	if !ready || hash == steadyHash {
		return 0
	}
	return c.cfg.PollAfterSteady
}

func (c *Controller) reconcileDelete(ctx context.Context, log *slog.Logger, cl *store.Cluster) (time.Duration, error) {
	// Node pools go first: their NodePools live in the namespace the cluster's work deletes.
	pools, err := c.enqueueNodePools(ctx, cl.ID)
	if err != nil {
		return 0, err
	}
	if len(pools) > 0 {
		st := proto.Clone(cl.Status).(*csv1.ClusterStatus)
		st.State = csv1.ClusterState_CLUSTER_STATE_UNINSTALLING
		st.Message = fmt.Sprintf("The cluster is being deleted; waiting for %d node pools to be deleted first.", len(pools))
		if _, err := c.writeStatus(ctx, cl, st); err != nil {
			return 0, err
		}
		return c.cfg.DeletePollPeriod, nil // and each pool's removal enqueues the cluster
	}
	if cl.Shard == "" {
		// Never placed, so nothing was sent.
		return 0, c.remove(ctx, log, cl)
	}
	name := manifests.WorkName(cl.ID)
	if err := c.works.Delete(ctx, cl.Shard, name); err != nil {
		return 0, fmt.Errorf("delete work of cluster %s on %s: %w", cl.ID, cl.Shard, err)
	}
	got, err := c.works.Get(ctx, cl.Shard, name)
	if apierrors.IsNotFound(err) {
		return 0, c.remove(ctx, log, cl)
	}
	if err != nil {
		return 0, fmt.Errorf("get work of deleting cluster %s: %w", cl.ID, err)
	}
	st, err := DeriveStatus(got, true)
	if err != nil {
		return 0, err
	}
	if _, err := c.writeStatus(ctx, cl, st); err != nil {
		return 0, err
	}
	return c.cfg.DeletePollPeriod, nil
}

func (c *Controller) remove(ctx context.Context, log *slog.Logger, cl *store.Cluster) error {
	err := c.st.RemoveCluster(ctx, cl.ID, cl.Revision)
	if errors.Is(err, store.ErrNotFound) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("remove cluster %s: %w", cl.ID, err)
	}
	log.Info("cluster deleted")
	c.forget(cl.ID)
	return nil
}

func (c *Controller) writeStatus(ctx context.Context, cl *store.Cluster, st *csv1.ClusterStatus) (*store.Cluster, error) {
	// The upgrade policy is not derived from feedback; only advanceUpgrade changes it.
	st.Upgrade = cl.Status.GetUpgrade()
	// Nor is the last feedback: Reconcile records it (heartbeat.go).
	carryFeedback(st, cl.Status)
	if cl.StatusUnchanged(st) {
		return cl, nil
	}
	out, err := c.st.UpdateStatus(ctx, cl.ID, cl.Revision, st)
	if err != nil {
		return nil, fmt.Errorf("write status of cluster %s: %w", cl.ID, err)
	}
	c.mu.Lock()
	c.written[cl.ID] = out.Revision
	c.mu.Unlock()
	c.log.Info("cluster status changed", "clusterID", cl.ID, "state", st.State.String(), "from", cl.Status.GetState().String(),
		"error_code", st.ErrorCode, "revision", out.Revision)
	return out, nil
}

// readWork is the work with its status, as maestro.Client.Get returns it: taken from the latest
// status event when that was written for the spec with specHash and no reconcile has used it
// yet (observed.go), else read from Maestro.
func (c *Controller) readWork(ctx context.Context, shard, name, specHash string) (*workv1.ManifestWork, error) {
	if !c.cfg.StatusFromMaestroOnly {
		if w := c.observed.take(shard, name, specHash); w != nil {
			c.statusReads.WithLabelValues("watch").Inc()
			return w, nil
		}
	}
	c.statusReads.WithLabelValues("maestro").Inc()
	return c.works.Get(ctx, shard, name)
}

func (c *Controller) forget(id string) {
	c.mu.Lock()
	delete(c.applied, id)
	delete(c.steady, id)
	delete(c.written, id)
	delete(c.lag, id)
	delete(c.stale, id)
	delete(c.refused, id)
	c.mu.Unlock()
	c.built.forget(id)
}

func (c *Controller) now() time.Time {
	if c.cfg.Now != nil {
		return c.cfg.Now()
	}
	return time.Now()
}

// withFeedbackMode builds an object's work with the feedback mode its moment asks for
// (manifests' feedbackScrape): Watch while a transition is in flight — the object is not
// READY, or its spec differs from the steady form last applied for key (an update, upgrade or
// scale starting, before its status says so) — and Poll once it is steady, or always with
// Config.PollFeedbackOnly. build makes the
// work for a mode; steadyHash is the hash of the Poll form, to remember once the work is sent.
func (c *Controller) withFeedbackMode(key string, ready bool, build func(watch bool) (*workv1.ManifestWork, error)) (work *workv1.ManifestWork, steadyHash string, err error) {
	steadyWork, err := build(false)
	if err != nil {
		return nil, "", err
	}
	steadyHash = steadyWork.Annotations[manifests.AnnotationSpecHash]
	c.mu.Lock()
	last, known := c.steady[key]
	c.mu.Unlock()
	if c.cfg.PollFeedbackOnly || ready && (!known || last == steadyHash) {
		return steadyWork, steadyHash, nil
	}
	work, err = build(true)
	return work, steadyHash, err
}
