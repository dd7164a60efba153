package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// BenchmarkRemoveClusterWithManyCredentials measures RemoveCluster of a cluster with many past
// ISSUED credentials (half SRE, half customer) and a few PENDING ones: the whole removal holds
// Cluster Service's global write lock, so its time is every other writer's wait. It reports
// the time per removal (ms/removal), not a pass/fail bound.
func BenchmarkRemoveClusterWithManyCredentials(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("credentials=%d", n), func(b *testing.B) {
			s := benchStore(b)
			ctx := context.Background()
			register(b, s, "mc-1", int32(b.N+1))
			b.ResetTimer()
			var held time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				c := readyCluster(b, s, i+1)
				for j := 0; j < n; j++ {
					var sre *csv1.SRECredential
					if j%2 == 1 {
						sre = &csv1.SRECredential{Person: "alice", Access: csv1.SREAccess_SRE_ACCESS_READ_ONLY}
					}
					cr, _, err := s.CreateCredential(ctx, &Credential{ID: fmt.Sprintf("c%d-%d", i, j), ClusterID: c.ID, PrivateKey: []byte("key"), SRE: sre}, testAudit)
					if err != nil {
						b.Fatal(err)
					}
					if j%50 == 49 {
						continue // left PENDING
					}
					cr.Status = &csv1.CredentialStatus{State: csv1.CredentialState_CREDENTIAL_STATE_ISSUED, ExpirationTime: timestamppb.New(time.Now().Add(time.Hour))}
					cr.Certificate, cr.CABundle, cr.APIURL = "cert", "ca", "https://api.example"
					if _, err := s.UpdateCredential(ctx, cr); err != nil {
						b.Fatal(err)
					}
				}
				dc, err := s.MarkDeleting(ctx, c.ID)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				if err := s.RemoveCluster(ctx, c.ID, dc.Revision); err != nil {
					b.Fatal(err)
				}
				held += time.Since(start)
			}
			b.ReportMetric(float64(held.Milliseconds())/float64(b.N), "ms/removal")
		})
	}
}
