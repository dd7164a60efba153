package frontend

import (
	"context"

	"google.golang.org/grpc"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// cachedStatus is the Cluster Service status of rd's cluster from the watch-fed cache, when
// there is one and it can vouch for the cluster at the revision rd reflects
// (clusterstatus.Cache.Get); false means: ask Cluster Service.
func (s *Server) cachedStatus(rd *armdoc.ResourceDocument) (*csv1.Cluster, bool) {
	return s.cachedStatusOf(rd.InternalID, rd.InternalRevision)
}

// cachedStatusOf is cachedStatus for a document with Cluster Service ID csID (none: false,
// without a lookup) at revision docRevision.
func (s *Server) cachedStatusOf(csID string, docRevision int64) (*csv1.Cluster, bool) {
	if s.statuses == nil || csID == "" {
		return nil, false
	}
	return s.statuses.Get(csID, docRevision)
}

// statusCacheSynced says whether there is a status cache and it can answer lookups now.
func (s *Server) statusCacheSynced() bool {
	return s.statuses != nil && s.statuses.Synced()
}

// writeRecorder is the Cluster Service client that tells the status cache the revision of every
// cluster write this frontend answers, so that a GET after it never reads the cache from
// before it (clusterstatus.Cache.Wrote). Every other call passes through.
type writeRecorder struct {
	csv1.ClustersClient
	wrote func(*csv1.Cluster)
}

func (w writeRecorder) CreateCluster(ctx context.Context, in *csv1.CreateClusterRequest, opts ...grpc.CallOption) (*csv1.Cluster, error) {
	cl, err := w.ClustersClient.CreateCluster(ctx, in, opts...)
	if err == nil {
		w.wrote(cl)
	}
	return cl, err
}

func (w writeRecorder) UpdateCluster(ctx context.Context, in *csv1.UpdateClusterRequest, opts ...grpc.CallOption) (*csv1.Cluster, error) {
	cl, err := w.ClustersClient.UpdateCluster(ctx, in, opts...)
	if err == nil {
		w.wrote(cl)
	}
	return cl, err
}

func (w writeRecorder) DeleteCluster(ctx context.Context, in *csv1.DeleteClusterRequest, opts ...grpc.CallOption) (*csv1.Cluster, error) {
	cl, err := w.ClustersClient.DeleteCluster(ctx, in, opts...)
	if err == nil {
		w.wrote(cl)
	}
	return cl, err
}
