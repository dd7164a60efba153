package server

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/openhcp/openhcp/cluster-service/pkg/authz"
)

// DefaultMaxWatchesPerCaller bounds the Watch streams one caller identity holds open at once on
// one Cluster Service process. Every open watch is a goroutine, a subscription to the store's
// change feed and about 10 KiB of memory (measured with client and server in one process), and
// each commit to its log wakes it for a read of the database, so a caller's watches multiply the
// database reads of every write; before the bound, one identity could open as many as its
// connections' stream limits allowed (1,024 a connection). The frontend holds one watch a replica
// (clusterstatus.Cache.Follow) and the backend one per followed kind a replica (csfollow), far
// below it.
const DefaultMaxWatchesPerCaller = 64

// unidentifiedCaller is the key of callers the authz interceptors did not identify (a server
// run without them, in tests): they share one bound.
const unidentifiedCaller = "unidentified"

// watchLimiter counts each caller's open watches.
type watchLimiter struct {
	max     int
	mu      sync.Mutex
	open    map[string]int
	refused *prometheus.CounterVec
}

func newWatchLimiter(max int) *watchLimiter {
	return &watchLimiter{max: max, open: map[string]int{},
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cluster_service_watches_refused_total",
			Help: "Watch streams refused because their caller identity held the most allowed open.",
		}, []string{"caller"})}
}

// acquire takes one of caller's watches, or is ResourceExhausted when caller holds max; release
// gives it back.
func (w *watchLimiter) acquire(caller string) (release func(), err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.open[caller] >= w.max {
		w.refused.WithLabelValues(caller).Inc()
		return nil, status.Errorf(codes.ResourceExhausted, "caller %s holds %d open watches, the most one identity may hold: close one first", caller, w.max)
	}
	w.open[caller]++
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.open[caller]--; w.open[caller] == 0 {
				delete(w.open, caller)
			}
		})
	}, nil
}

// Health is h with its Watch streams under the same per-caller bound as the model's watches:
// a health Watch is a stream held open as long as its caller wants (a goroutine and a
// subscription each), and the methods table admits our own workloads to it, so without the
// bound one of them could hold streams past every other limit. Check and List are unbounded
// unary calls.
func (s *Server) Health(h healthpb.HealthServer) healthpb.HealthServer {
	return boundedHealth{HealthServer: h, watches: s.watches}
}

type boundedHealth struct {
	healthpb.HealthServer
	watches *watchLimiter
}

// Watch takes one of the caller's watches for as long as the stream lasts.
func (b boundedHealth) Watch(req *healthpb.HealthCheckRequest, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	caller, ok := authz.Caller(stream.Context())
	if !ok {
		caller = unidentifiedCaller
	}
	release, err := b.watches.acquire(caller)
	if err != nil {
		return err
	}
	defer release()
	return b.HealthServer.Watch(req, stream)
}
