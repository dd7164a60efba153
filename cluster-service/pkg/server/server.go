// Package server implements Cluster Service's gRPC API (Clusters and ProvisionShards) on top of
// the store: input validation with field violations, error codes, correlation-ID logging,
// per-method and per-shard Prometheus metrics, and the WatchClusters stream.
package server

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/controller"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/cluster-service/pkg/placement"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/cluster-service/pkg/versions"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
)

// Config configures the server; zero values take defaults.
type Config struct {
	// Env names the environment in cluster namespaces; default "dev".
	Env string
	// Policy places new clusters; default least-loaded.
	Policy placement.Policy
	// KeepAlive is how often an idle watch gets a BOOKMARK; default 30s.
	KeepAlive time.Duration
	// MaxWatchesPerCaller bounds the watches one caller identity holds open at once; more are
	// ResourceExhausted. Default DefaultMaxWatchesPerCaller.
	MaxWatchesPerCaller int
	Log                 *slog.Logger
	// Registerer receives the request and shard metrics; nil registers none.
	Registerer prometheus.Registerer
	// Versions is the version catalogue creates are resolved against; default versions.Default.
	Versions *versions.Catalogue
	// Now is the clock for end-of-life checks; default time.Now.
	Now func() time.Time
	// BaseDomain is the region's DNS base domain; a new cluster's is <namespace>.<BaseDomain>.
	// Default manifests.DefaultBaseDomain.
	BaseDomain string
	// OIDCIssuerBaseURL: a new cluster's OIDC issuer is <OIDCIssuerBaseURL>/<cluster id>.
	// Default manifests.DefaultOIDCIssuerBaseURL.
	OIDCIssuerBaseURL string
	// SREStatementKey verifies the admin API's signed statements, the only source of an SRE
	// credential's person (srestatement). Without it every SRE credential is refused.
	SREStatementKey ed25519.PublicKey
	// Manifests is the build configuration the controller sends works with (its Env is Env):
	// a write is refused if the work built from it would be too large (worksize.go).
	Manifests manifests.Config
	// CustomerCredentialValidity is the lifetime the credentials controller asks for a
	// customer's credential (its --break-glass-validity), for the audit record; default
	// controller.DefaultCredentialValidity.
	CustomerCredentialValidity time.Duration
}

// Server implements csv1.ClustersServer, csv1.NodePoolsServer and csv1.ProvisionShardsServer.
type Server struct {
	csv1.UnimplementedClustersServer
	csv1.UnimplementedProvisionShardsServer
	csv1.UnimplementedNodePoolsServer
	csv1.UnimplementedVersionsServer
	csv1.UnimplementedUpgradePoliciesServer

	st      *store.Store
	cfg     Config
	metrics *metrics
	watches *watchLimiter
	// decodes turns a request that does not decode into InvalidArgument (decode.go): its codec
	// is in ServerOptions, its handler wrappers in Register.
	decodes *decodeFailures

	drainOnce sync.Once
	draining  chan struct{}
}

// Drain ends every open watch with Unavailable, so clients reconnect to another replica and
// grpc.Server.GracefulStop does not wait for streams that never end on their own.
func (s *Server) Drain() { s.drainOnce.Do(func() { close(s.draining) }) }

// New makes a server over st.
func New(st *store.Store, cfg Config) *Server {
	if cfg.Env == "" {
		cfg.Env = manifests.DefaultEnv
	}
	if cfg.Policy == nil {
		cfg.Policy = placement.LeastLoaded{}
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 30 * time.Second
	}
	if cfg.MaxWatchesPerCaller <= 0 {
		cfg.MaxWatchesPerCaller = DefaultMaxWatchesPerCaller
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Versions == nil {
		// The embedded catalogue is checked by its own test; failing here would be a build defect.
		c, err := versions.Default()
		if err != nil {
			panic(fmt.Sprintf("embedded version catalogue: %v", err))
		}
		cfg.Versions = c
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.CustomerCredentialValidity <= 0 {
		cfg.CustomerCredentialValidity = controller.DefaultCredentialValidity
	}
	s := &Server{st: st, cfg: cfg, metrics: newMetrics(st), draining: make(chan struct{}), watches: newWatchLimiter(cfg.MaxWatchesPerCaller),
		decodes: &decodeFailures{}}
	if cfg.Registerer != nil {
		s.metrics.register(cfg.Registerer)
		cfg.Registerer.MustRegister(s.watches.refused)
	}
	return s
}

// ServerOptions returns the interceptors (correlation-ID logging, metrics, panic recovery)
// and the codec (a request that does not decode is InvalidArgument: decode.go) to pass to
// grpc.NewServer together with any transport options; other interceptors (authz) chain after
// these.
func (s *Server) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ForceServerCodecV2(s.decodes.codec()),
		grpc.ChainUnaryInterceptor(s.unaryInterceptor),
		grpc.ChainStreamInterceptor(s.streamInterceptor),
	}
}

// Register registers the Clusters, NodePools, ProvisionShards, Versions, UpgradePolicies,
// ExternalAuths and Credentials services on g, each handler answering InvalidArgument for a
// request that does not decode (decode.go; g must have ServerOptions' codec).
func (s *Server) Register(g *grpc.Server) {
	r := registrar{g: g, f: s.decodes}
	csv1.RegisterClustersServer(r, s)
	csv1.RegisterProvisionShardsServer(r, s)
	csv1.RegisterNodePoolsServer(r, s)
	csv1.RegisterVersionsServer(r, s)
	csv1.RegisterUpgradePoliciesServer(r, s)
	csv1.RegisterExternalAuthsServer(r, s.ExternalAuthsServer())
	csv1.RegisterCredentialsServer(r, s.CredentialsServer())
}

// ---- Clusters

// CreateCluster implements csv1.ClustersServer.
func (s *Server) CreateCluster(ctx context.Context, req *csv1.CreateClusterRequest) (*csv1.Cluster, error) {
	spec, err := validateCreate(req, s.cfg.Versions, s.cfg.Now())
	if err != nil {
		return nil, err
	}
	in := req.GetCluster()
	ns := manifests.Namespace(s.cfg.Env, in.GetId())
	// Cluster Service owns the cluster's DNS domain and OIDC issuer; both are stored so a later
	// change of the region's flags never changes them (HyperShift's fields are immutable).
	if spec.DnsBaseDomain == "" {
		spec.DnsBaseDomain = manifests.ClusterBaseDomain(s.cfg.BaseDomain, ns)
	}
	spec.IssuerUrl = manifests.IssuerURL(s.cfg.OIDCIssuerBaseURL, in.GetId())
	var v violations
	s.clusterWorkFits(&v, "cluster.spec", spec, &store.Cluster{ID: in.GetId(), ARMResourceID: in.GetArmResourceId()}, spec, nil, nil)
	if err := v.err(); err != nil {
		return nil, err
	}
	c, created, err := s.st.CreateCluster(ctx, &store.Cluster{
		ID: in.GetId(), ARMResourceID: in.GetArmResourceId(), Spec: spec, Namespace: ns,
	}, s.cfg.Policy)
	if err != nil {
		return nil, s.toStatus(ctx, "create cluster", err)
	}
	log := LoggerFrom(ctx).With("clusterID", c.ID, "shard", c.Shard)
	if !created && c.Deleting {
		// Returning it would tell the caller its create succeeded while the cluster goes away.
		return nil, status.Errorf(codes.FailedPrecondition, "the cluster %s for this ARM resource is being deleted; retry when it is gone", c.ID)
	}
	if created {
		log.Info("cluster created", "resourceID", c.ARMResourceID, "revision", c.Revision)
		s.metrics.placed.WithLabelValues(c.Shard).Inc()
	} else {
		log.Info("cluster already exists for this ARM resource; returning it", "requested_id", in.GetId())
	}
	return toProto(c), nil
}

// GetCluster implements csv1.ClustersServer.
func (s *Server) GetCluster(ctx context.Context, req *csv1.GetClusterRequest) (*csv1.Cluster, error) {
	var v violations
	validateClusterID(&v, "id", req.GetId())
	if err := v.err(); err != nil {
		return nil, err
	}
	c, err := s.st.GetCluster(ctx, req.GetId())
	if err != nil {
		return nil, s.toStatus(ctx, "get cluster", err)
	}
	return toProto(c), nil
}

const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

// ListClusters implements csv1.ClustersServer.
func (s *Server) ListClusters(ctx context.Context, req *csv1.ListClustersRequest) (*csv1.ListClustersResponse, error) {
	var v violations
	size := int(req.GetPageSize())
	switch {
	case size < 0:
		v.add("page_size", "must not be negative")
	case size == 0:
		size = defaultPageSize
	case size > maxPageSize:
		size = maxPageSize
	}
	var after string
	if tok := req.GetPageToken(); tok != "" {
		b, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil || !clusterIDRE.Match(b) {
			v.add("page_token", "is not a token from a previous response")
		}
		after = string(b)
	}
	if ids := req.GetIds(); len(ids) > maxPageSize {
		v.add("ids", "must list at most %d cluster IDs, not %d", maxPageSize, len(ids))
	} else {
		for i, id := range ids {
			validateClusterID(&v, fmt.Sprintf("ids[%d]", i), id)
		}
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	cs, err := s.st.ListClusters(ctx, store.ListOptions{Limit: size + 1, AfterID: after, ARMResourceIDPrefix: req.GetArmResourceIdPrefix(), IDs: req.GetIds()})
	if err != nil {
		return nil, s.toStatus(ctx, "list clusters", err)
	}
	resp := &csv1.ListClustersResponse{}
	if len(cs) > size {
		cs = cs[:size]
		resp.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte(cs[size-1].ID))
	}
	for _, c := range cs {
		resp.Clusters = append(resp.Clusters, toProto(c))
	}
	return resp, nil
}

// DeleteCluster implements csv1.ClustersServer.
func (s *Server) DeleteCluster(ctx context.Context, req *csv1.DeleteClusterRequest) (*csv1.Cluster, error) {
	var v violations
	validateClusterID(&v, "id", req.GetId())
	if err := v.err(); err != nil {
		return nil, err
	}
	c, err := s.st.MarkDeleting(ctx, req.GetId())
	if err != nil {
		return nil, s.toStatus(ctx, "delete cluster", err)
	}
	LoggerFrom(ctx).Info("cluster deletion requested", "clusterID", c.ID, "shard", c.Shard, "revision", c.Revision)
	return toProto(c), nil
}

// WatchClusters implements csv1.ClustersServer: a snapshot (since_revision 0) or a replay of
// every change after since_revision, a BOOKMARK, then live changes with BOOKMARK keep-alives.
func (s *Server) WatchClusters(req *csv1.WatchClustersRequest, stream grpc.ServerStreamingServer[csv1.ClusterEvent]) error {
	return serveWatch(s, req.GetSinceRevision(), stream, watchLog[*csv1.ClusterEvent]{
		snapshot: func(ctx context.Context) ([]*csv1.ClusterEvent, int64, error) {
			cs, rev, err := s.st.Snapshot(ctx)
			return messages(cs, func(c *store.Cluster) *csv1.ClusterEvent {
				return &csv1.ClusterEvent{Type: csv1.EventType_EVENT_TYPE_UPSERTED, Revision: c.Revision, Cluster: toProto(c)}
			}), rev, err
		},
		eventsAfter: func(ctx context.Context, after int64, limit int) ([]*csv1.ClusterEvent, error) {
			evs, err := s.st.EventsAfter(ctx, after, limit)
			return messages(evs, func(ev store.Event) *csv1.ClusterEvent {
				return &csv1.ClusterEvent{Type: ev.Type, Revision: ev.Revision, Cluster: toProto(ev.Cluster)}
			}), err
		},
		compacted: s.st.CompactedRevision,
		current:   s.st.CurrentRevision,
		changes:   s.st.Changes,
		bookmark: func(rev int64) *csv1.ClusterEvent {
			return &csv1.ClusterEvent{Type: csv1.EventType_EVENT_TYPE_BOOKMARK, Revision: rev}
		},
		snapshotOp: "watch snapshot", compactedOp: "watch", eventsOp: "watch events", history: "event history",
	})
}

// ---- ProvisionShards

// RegisterShard implements csv1.ProvisionShardsServer.
func (s *Server) RegisterShard(ctx context.Context, req *csv1.RegisterShardRequest) (*csv1.ProvisionShard, error) {
	if err := validateShard(req.GetShard()); err != nil {
		return nil, err
	}
	in := req.GetShard()
	sh, err := s.st.RegisterShard(ctx, placement.Shard{Name: in.GetName(), Status: in.GetStatus(), MaxClusters: in.GetMaxClusters(), Labels: in.GetLabels()})
	if err != nil {
		return nil, s.toStatus(ctx, "register shard", err)
	}
	LoggerFrom(ctx).Info("shard registered", "shard", sh.Name, "status", sh.Status.String(), "max_clusters", sh.MaxClusters)
	return shardProto(sh), nil
}

// ListShards implements csv1.ProvisionShardsServer.
func (s *Server) ListShards(ctx context.Context, _ *csv1.ListShardsRequest) (*csv1.ListShardsResponse, error) {
	shs, err := s.st.ListShards(ctx)
	if err != nil {
		return nil, s.toStatus(ctx, "list shards", err)
	}
	resp := &csv1.ListShardsResponse{}
	for _, sh := range shs {
		resp.Shards = append(resp.Shards, shardProto(sh))
	}
	return resp, nil
}

// SetShardStatus implements csv1.ProvisionShardsServer.
func (s *Server) SetShardStatus(ctx context.Context, req *csv1.SetShardStatusRequest) (*csv1.ProvisionShard, error) {
	var v violations
	if !shardNameRE.MatchString(req.GetName()) {
		v.add("name", "must be a DNS label, not %q", req.GetName())
	}
	if _, ok := csv1.ShardStatus_name[int32(req.GetStatus())]; !ok || req.GetStatus() == csv1.ShardStatus_SHARD_STATUS_UNSPECIFIED {
		v.add("status", "must be ACTIVE, MAINTENANCE or OFFLINE")
	}
	if _, ok := csv1.ShardStatus_name[int32(req.GetIfStatus())]; !ok {
		v.add("if_status", "must be unset, ACTIVE, MAINTENANCE or OFFLINE")
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	sh, err := s.st.SetShardStatus(ctx, req.GetName(), req.GetStatus(), req.GetIfStatus())
	if err != nil {
		return nil, s.toStatus(ctx, "set shard status", err)
	}
	LoggerFrom(ctx).Info("shard status set", "shard", sh.Name, "status", sh.Status.String())
	return shardProto(sh), nil
}

// ---- conversions and errors

func toProto(c *store.Cluster) *csv1.Cluster {
	return &csv1.Cluster{
		Id: c.ID, ArmResourceId: c.ARMResourceID, Spec: c.Spec, Status: c.Status, Shard: c.Shard, Revision: c.Revision, SpecRevision: c.SpecRevision,
		CreateTime: timestamppb.New(c.CreateTime), UpdateTime: timestamppb.New(c.UpdateTime), Namespace: c.Namespace,
	}
}

func shardProto(sh placement.Shard) *csv1.ProvisionShard {
	return &csv1.ProvisionShard{Name: sh.Name, Status: sh.Status, MaxClusters: sh.MaxClusters, ClusterCount: sh.ClusterCount, Labels: sh.Labels}
}

// toStatus maps store errors to gRPC codes; anything unexpected is logged and becomes Internal
// without leaking details to the caller.
func (s *Server) toStatus(ctx context.Context, op string, err error) error {
	if _, ok := status.FromError(err); ok {
		return err // already a gRPC status (placement's ResourceExhausted)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return status.Error(codes.NotFound, op+": not found")
	case errors.Is(err, store.ErrIDInUse):
		return status.Error(codes.AlreadyExists, err.Error())
	case errors.Is(err, store.ErrDeleting):
		return status.Error(codes.FailedPrecondition, op+": "+err.Error())
	case errors.Is(err, store.ErrConflict):
		return status.Error(codes.Aborted, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, op+": canceled")
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, op+": deadline exceeded")
	case postgres.Unreachable(err):
		// The database is restarting or away: the caller retries (the frontend answers 503
		// with a Retry-After), as it would for Cluster Service itself being away.
		LoggerFrom(ctx).Warn(op+" failed: the database is unreachable", "error", err)
		return status.Error(codes.Unavailable, op+": the database is unreachable; retry")
	}
	LoggerFrom(ctx).Error(op+" failed", "error", err)
	return status.Error(codes.Internal, op+": internal error")
}
