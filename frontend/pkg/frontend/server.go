// Package frontend is the ARM resource provider: routing, middleware, the error reporter and
// the handlers that turn ARM calls into Cluster Service calls and store documents. Async
// operations it starts are finished by the backend.
package frontend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
	_ "github.com/openhcp/openhcp/frontend/pkg/api/v20240610preview" // each registers its version
	_ "github.com/openhcp/openhcp/frontend/pkg/api/v20251223preview"
	_ "github.com/openhcp/openhcp/frontend/pkg/api/v20260630preview"
	_ "github.com/openhcp/openhcp/frontend/pkg/api/v20260901preview"
	"github.com/openhcp/openhcp/frontend/pkg/clusterstatus"
	"github.com/openhcp/openhcp/frontend/pkg/rolesets"
	"github.com/openhcp/openhcp/internal/docstore"
)

// Config wires the server. Store, Clusters and Location are required.
type Config struct {
	Store    docstore.Store
	Clusters csv1.ClustersClient
	// NodePools is Cluster Service's node pool client; without it the nodePools paths are not
	// served.
	NodePools csv1.NodePoolsClient
	// ExternalAuths is Cluster Service's external auth client; without it the externalAuths
	// paths are not served.
	ExternalAuths csv1.ExternalAuthsClient
	// ClientSubjects, if set, are the subject common names of the client certificates allowed
	// to call (ARM's); requests need a verified client certificate (mutual TLS) with one of them.
	ClientSubjects []string
	// RoleSets is the hcpOperatorIdentityRoleSets catalogue (default: rolesets.Default()).
	RoleSets *rolesets.Catalogue
	// Versions is Cluster Service's version catalogue; without it hcpOpenShiftVersions is not
	// served.
	Versions csv1.VersionsClient
	// Credentials is Cluster Service's break-glass client; without it requestAdminCredential and
	// revokeCredentials are not served.
	Credentials csv1.CredentialsClient
	// Location is the Azure region this frontend serves, e.g. "eastus".
	Location string
	Logger   *slog.Logger
	// RetryAfter is what async responses advise clients to wait between polls (default 5s,
	// rounded to whole seconds).
	RetryAfter time.Duration
	// CapacityRetryAfter is advised when Cluster Service has no capacity (default 60s).
	CapacityRetryAfter time.Duration
	// OperationTTL is how long operation documents are kept (default 7 days).
	OperationTTL time.Duration
	// ClusterServiceTimeout bounds each Cluster Service call (default 30s).
	ClusterServiceTimeout time.Duration
	// PageSize is the number of resources per list page (default 100).
	PageSize int
	// PageBytes bounds the rendered resources of a list page past its first (default
	// DefaultPageBytes).
	PageBytes int
	// Ready, if set, is checked by /healthz.
	Ready func(ctx context.Context) error
	// ListItemsBytes bounds the rendered clusters kept for later lists (listitems.go; default
	// 64 MiB).
	ListItemsBytes int
	// ClusterStatus, if set, is Cluster Service's clusters as its WatchClusters stream shows them
	// (the caller runs its Follow): a GET or list of clusters reads their status from it when it
	// can vouch for them, and calls Cluster Service only for the others. Without it every GET
	// and list calls Cluster Service.
	ClusterStatus *clusterstatus.Cache
}

// DefaultListItemsBytes is Config.ListItemsBytes's default: room for some ten thousand rendered
// clusters of a few KB each.
const DefaultListItemsBytes = 64 << 20

// Server is the ARM frontend.
type Server struct {
	cfg     Config
	log     *slog.Logger
	store   docstore.Store
	cs      csv1.ClustersClient
	mux     *http.ServeMux
	metrics *metrics
	handler http.Handler
	// subscriptions remembers registrations for GETs, briefly (subscription_cache.go).
	subscriptions *subscriptionCache
	// statuses is cfg.ClusterStatus (statuscache.go); nil without one.
	statuses *clusterstatus.Cache
	// listItems are clusters as lists last rendered them (listitems.go).
	listItems listItems
}

// NewServer checks cfg, fills in defaults and builds the routes.
func NewServer(cfg Config) (*Server, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("frontend: Store is required")
	case cfg.Clusters == nil:
		return nil, errors.New("frontend: Clusters (Cluster Service client) is required")
	case cfg.Location == "":
		return nil, errors.New("frontend: Location is required")
	}
	cfg.Location = normalizeLocation(cfg.Location)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = 5 * time.Second
	}
	if cfg.CapacityRetryAfter <= 0 {
		cfg.CapacityRetryAfter = time.Minute
	}
	if cfg.OperationTTL <= 0 {
		cfg.OperationTTL = 7 * 24 * time.Hour
	}
	if cfg.ClusterServiceTimeout <= 0 {
		cfg.ClusterServiceTimeout = 30 * time.Second
	}
	if cfg.PageSize <= 0 {
		cfg.PageSize = 100
	}
	if cfg.PageBytes <= 0 {
		cfg.PageBytes = DefaultPageBytes
	}
	if cfg.ListItemsBytes <= 0 {
		cfg.ListItemsBytes = DefaultListItemsBytes
	}
	if cfg.RoleSets == nil {
		rs, err := rolesets.Default()
		if err != nil {
			return nil, fmt.Errorf("frontend: default operator identity role sets: %w", err)
		}
		cfg.RoleSets = rs
	}
	s := &Server{cfg: cfg, log: cfg.Logger, store: cfg.Store, cs: cfg.Clusters, mux: http.NewServeMux(), metrics: newMetrics(), subscriptions: newSubscriptionCache()}
	s.listItems.maxBytes = cfg.ListItemsBytes
	if cfg.ClusterStatus != nil {
		s.statuses = cfg.ClusterStatus
		s.cs = writeRecorder{ClustersClient: cfg.Clusters, wrote: cfg.ClusterStatus.Wrote}
		s.metrics.reg.MustRegister(cfg.ClusterStatus.Collectors()...)
		cfg.ClusterStatus.OnRemoved(s.listItems.dropCluster)
	}
	s.routes()
	s.handler = chain(s.dispatch,
		s.middlewareRequestID,
		s.middlewareLogging,
		s.middlewarePanic,
		s.middlewareClientCertificate,
		s.middlewareLowercasePath,
		s.middlewareBody,
	)
	return s, nil
}

// Handler serves the ARM API and /healthz.
func (s *Server) Handler() http.Handler { return s.handler }

// MetricsHandler serves Prometheus metrics; run it on its own listener.
func (s *Server) MetricsHandler() http.Handler { return s.metrics.handler() }

// Routes. Patterns are lowercase: middlewareLowercasePath folds the request path first, and
// handlers read names from the original path.
const (
	providerPath    = "/providers/microsoft.redhatopenshift"
	clustersPath    = providerPath + "/hcpopenshiftclusters"
	clusterPattern  = "/subscriptions/{subscriptionId}/resourcegroups/{resourceGroupName}" + clustersPath + "/{clusterName}"
	operationsScope = "/subscriptions/{subscriptionId}" + providerPath + "/locations/{location}"
)

// routeOptions say which checks run before a handler.
type routeOptions struct {
	// versions checks api-version against the registered cluster versions; subscriptionAPI
	// checks it is "2.0".
	versions        bool
	subscriptionAPI bool
	// subscription checks the subscription's registration state.
	subscription bool
}

var resourceRoute = routeOptions{versions: true, subscription: true}

func (s *Server) routes() {
	s.handle("GET /healthz", s.healthz, routeOptions{})
	s.handle("PUT /subscriptions/{subscriptionId}", s.putSubscription, routeOptions{subscriptionAPI: true})
	s.handle("GET /subscriptions/{subscriptionId}", s.getSubscription, routeOptions{subscriptionAPI: true})

	// Tenant level: no subscription to check.
	s.handle("GET "+providerPath+"/operations", s.listOperations, routeOptions{versions: true})

	s.handle("PUT "+clusterPattern, s.putCluster, resourceRoute)
	s.handle("PATCH "+clusterPattern, s.patchCluster, resourceRoute)
	s.handle("GET "+clusterPattern, s.getCluster, resourceRoute)
	s.handle("DELETE "+clusterPattern, s.deleteCluster, resourceRoute)
	s.handle("GET /subscriptions/{subscriptionId}/resourcegroups/{resourceGroupName}"+clustersPath, s.listClusters, resourceRoute)
	s.handle("GET /subscriptions/{subscriptionId}"+clustersPath, s.listClusters, resourceRoute)
	nodePoolResource.routes(s)
	s.credentialRoutes()
	externalAuthResource.routes(s)

	s.versionRoutes() // handlers_versions.go
	// Preflight carries ARM's api-version, not ours; the subscription is checked as ARO HCP does.
	s.handle(preflightPattern, s.preflight, routeOptions{subscription: true})
	s.roleSetRoutes()
	s.handle("GET "+operationsScope+"/hcpoperationstatuses/{operationId}", s.getOperationStatus, resourceRoute)
	s.handle("GET "+operationsScope+"/hcpoperationresults/{operationId}", s.getOperationResult, resourceRoute)
}

// handlerFunc is a handler that returns its error to the one reporter.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (s *Server) handle(pattern string, h handlerFunc, o routeOptions) {
	var mws []middleware
	if o.versions || o.subscriptionAPI {
		mws = append(mws, s.apiVersionMiddleware(o))
	}
	if o.subscription {
		mws = append(mws, s.middlewareSubscriptionState)
	}
	final := func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.report(w, r, err)
		}
	}
	inner := chain(final, mws...)
	s.mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info(r).route = pattern
		inner.ServeHTTP(w, r)
	}))
}

// dispatch routes the request; what the mux does not know gets an ARM 404 or 405.
func (s *Server) dispatch(w http.ResponseWriter, r *http.Request) {
	if _, pattern := s.mux.Handler(r); pattern != "" {
		s.mux.ServeHTTP(w, r)
		return
	}
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodPost} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "" {
			s.report(w, r, cloudError(http.StatusMethodNotAllowed, "MethodNotAllowed", "", "The method %s is not allowed on this resource.", r.Method))
			return
		}
	}
	s.report(w, r, cloudError(http.StatusNotFound, "NotFound", "", "The requested path %s is not served by this resource provider.", info(r).originalPath))
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.cfg.Ready(ctx); err != nil {
			s.log.Warn("health check failed", "error", err)
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return nil
		}
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Write([]byte("ok\n"))
	return nil
}

// normalizeLocation folds "East US" and "eastus" together, as ARM does.
func normalizeLocation(l string) string {
	return strings.ToLower(strings.ReplaceAll(l, " ", ""))
}

// apiVersions served for resources, for messages.
func servedVersions() string { return strings.Join(api.Versions(), ", ") }
