package server

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/internal/logattr"
)

// Metadata keys carrying the ARM correlation IDs on every call.
const (
	MDCorrelationRequestID = "x-ms-correlation-request-id"
	MDClientRequestID      = "x-ms-client-request-id"
	MDRequestID            = "x-ms-request-id"
)

type loggerKey struct{}

// LoggerFrom returns the request's logger (with its correlation IDs), or slog.Default.
func LoggerFrom(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

// requestLogger adds the method and the correlation IDs in the incoming metadata.
func (s *Server) requestLogger(ctx context.Context, method string) *slog.Logger {
	attrs := []any{"method", method}
	md, _ := metadata.FromIncomingContext(ctx)
	// Each metadata key is logged under the attribute name every service uses (internal/logattr).
	for _, k := range []struct{ md, attr string }{
		{MDCorrelationRequestID, logattr.KeyCorrelationRequestID},
		{MDClientRequestID, logattr.KeyClientRequestID},
		{MDRequestID, logattr.KeyRequestID},
	} {
		if v := md.Get(k.md); len(v) > 0 && v[0] != "" {
			attrs = append(attrs, k.attr, v[0])
		}
	}
	return s.cfg.Log.With(attrs...)
}

func (s *Server) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	log := s.requestLogger(ctx, info.FullMethod)
	ctx = context.WithValue(ctx, loggerKey{}, log)
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			log.Error("panic in handler", "panic", r, "stack", string(debug.Stack()))
			err = status.Error(codes.Internal, "internal error")
		}
		s.observe(log, info.FullMethod, start, err)
	}()
	return handler(ctx, req)
}

type loggedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (l *loggedStream) Context() context.Context { return l.ctx }

func (s *Server) streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	log := s.requestLogger(ss.Context(), info.FullMethod)
	start := time.Now()
	s.metrics.streams.WithLabelValues(info.FullMethod).Inc()
	defer s.metrics.streams.WithLabelValues(info.FullMethod).Dec()
	log.Info("stream started")
	defer func() {
		if r := recover(); r != nil {
			log.Error("panic in stream handler", "panic", r, "stack", string(debug.Stack()))
			err = status.Error(codes.Internal, "internal error")
		}
		s.observe(log, info.FullMethod, start, err)
	}()
	return handler(srv, &loggedStream{ServerStream: ss, ctx: context.WithValue(ss.Context(), loggerKey{}, log)})
}

func (s *Server) observe(log *slog.Logger, method string, start time.Time, err error) {
	code := status.Code(err)
	d := time.Since(start)
	s.metrics.requests.WithLabelValues(method, code.String()).Inc()
	s.metrics.duration.WithLabelValues(method, code.String()).Observe(d.Seconds())
	level := slog.LevelInfo
	switch code {
	case codes.OK, codes.NotFound, codes.InvalidArgument, codes.AlreadyExists, codes.ResourceExhausted, codes.Canceled:
	default:
		level = slog.LevelWarn
	}
	log.Log(context.Background(), level, "request finished", "code", code.String(), "duration_ms", d.Milliseconds(), "error", errString(err))
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return status.Convert(err).Message()
}

type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	streams  *prometheus.GaugeVec
	placed   *prometheus.CounterVec
	shards   *shardCollector
}

func newMetrics(st *store.Store) *metrics {
	return &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cluster_service_grpc_requests_total", Help: "gRPC requests by method and status code.",
		}, []string{"method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "cluster_service_grpc_request_duration_seconds", Help: "gRPC request (or stream) duration by method and status code.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, []string{"method", "code"}),
		streams: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cluster_service_grpc_open_streams", Help: "Open server streams by method.",
		}, []string{"method"}),
		placed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cluster_service_clusters_placed_total", Help: "Clusters placed on each shard by this process.",
		}, []string{"shard"}),
		shards: &shardCollector{st: st},
	}
}

func (m *metrics) register(r prometheus.Registerer) {
	r.MustRegister(m.requests, m.duration, m.streams, m.placed, m.shards)
}

// shardCollector reads the shards from the store at scrape time, so every replica reports the
// same, current numbers.
type shardCollector struct{ st *store.Store }

var (
	shardClustersDesc = prometheus.NewDesc("cluster_service_shard_clusters", "Clusters placed on the shard now.", []string{"shard", "status"}, nil)
	shardCapacityDesc = prometheus.NewDesc("cluster_service_shard_capacity_left", "Clusters the shard can still take (0 unless ACTIVE).", []string{"shard"}, nil)
	shardMaxDesc      = prometheus.NewDesc("cluster_service_shard_max_clusters", "Capacity of the shard.", []string{"shard"}, nil)
	shardUpDesc       = prometheus.NewDesc("cluster_service_shard_metrics_up", "1 if the shard metrics could be read from the database.", nil, nil)
)

func (c *shardCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- shardClustersDesc
	ch <- shardCapacityDesc
	ch <- shardMaxDesc
	ch <- shardUpDesc
}

func (c *shardCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	shards, err := c.st.ListShards(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(shardUpDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(shardUpDesc, prometheus.GaugeValue, 1)
	for _, sh := range shards {
		left := 0.0
		if sh.Eligible() {
			left = float64(sh.Free())
		}
		ch <- prometheus.MustNewConstMetric(shardClustersDesc, prometheus.GaugeValue, float64(sh.ClusterCount), sh.Name, sh.Status.String())
		ch <- prometheus.MustNewConstMetric(shardCapacityDesc, prometheus.GaugeValue, left, sh.Name)
		ch <- prometheus.MustNewConstMetric(shardMaxDesc, prometheus.GaugeValue, float64(sh.MaxClusters), sh.Name)
	}
}
