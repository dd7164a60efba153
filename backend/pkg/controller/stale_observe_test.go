package controller

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// slowGet is a Clusters client whose first GetCluster inside a window reads Cluster Service,
// lets the create of the cluster land (land), and answers what it read only at until.
type slowGet struct {
	csv1.ClustersClient
	inWindow func() bool
	land     func()
	until    func() time.Time

	mu       sync.Mutex
	done     bool
	landedAt time.Time
}

func (s *slowGet) GetCluster(ctx context.Context, in *csv1.GetClusterRequest, opts ...grpc.CallOption) (*csv1.Cluster, error) {
	got, err := s.ClustersClient.GetCluster(ctx, in, opts...)
	s.mu.Lock()
	slow := !s.done && s.inWindow()
	s.done = s.done || slow
	s.mu.Unlock()
	if slow {
		s.land()
		s.mu.Lock()
		s.landedAt = time.Now()
		s.mu.Unlock()
		time.Sleep(time.Until(s.until()))
	}
	return got, err
}

func (s *slowGet) landed() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.landedAt
}

// TestGraceIsJudgedByWhenClusterServiceWasRead: the backend reads Cluster Service within
// NotFoundGrace and finds nothing, the create lands meanwhile (within the grace), and the answer
// comes back after the grace has passed. Judged by when the answer came, the create would fail
// though it landed, or the delete that canceled it would finish and leave the landed cluster with
// no document. Judged by when the read began, the backend looks again and sees the cluster.
func TestGraceIsJudgedByWhenClusterServiceWasRead(t *testing.T) {
	const grace = 3 * time.Second
	for _, tc := range []struct {
		name string
		// write writes the operation documents and returns the operation the backend follows.
		write func(h *harness, rid, csID string) string
		// settled tells when to judge; ok whether what the backend did is right.
		settled, ok func(h *harness, opID, csID string) bool
	}{{
		name: "delete_of_a_running_create",
		write: func(h *harness, rid, csID string) string {
			_, delOp := h.writeCanceledCreate(rid, csID, 0)
			return delOp
		},
		settled: func(h *harness, opID, csID string) bool {
			c, err := h.csDB.GetCluster(t0(), csID)
			return h.operation(opID).Status.Terminal() || (err == nil && c.Deleting)
		},
		ok: func(h *harness, opID, csID string) bool {
			c, err := h.csDB.GetCluster(t0(), csID)
			return err != nil || c.Deleting // a cluster that landed is deleted, not left
		},
	}, {
		name: "create",
		write: func(h *harness, rid, csID string) string {
			opID := uuid.NewString()
			h.writeOperation(rid, csID, opID, armdoc.OperationCreate, armdoc.StateAccepted, 0, true)
			return opID
		},
		settled: func(h *harness, opID, _ string) bool {
			return h.operation(opID).Status.Terminal() || time.Since(h.operation(opID).StartTime) > grace+2*time.Second
		},
		ok: func(h *harness, opID, _ string) bool { return h.operation(opID).Status != armdoc.StateFailed },
	}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			rid := h.resourceID("c01")
			csID := strings.ReplaceAll(uuid.NewString(), "-", "")
			var start time.Time // the followed operation's start (the later one)
			cs := &slowGet{ClustersClient: h.cs,
				inWindow: func() bool {
					age := time.Since(start)
					return age >= grace-time.Second && age < grace-200*time.Millisecond
				},
				land:  func() { h.createInClusterService(rid, csID) },
				until: func() time.Time { return start.Add(grace + 300*time.Millisecond) },
			}
			opID := tc.write(h, rid, csID)
			start = h.operation(opID).StartTime
			h.cs = cs // the backend's client; its CreateCluster is Cluster Service's own
			h.start(Config{ResyncPeriod: 200 * time.Millisecond, NotFoundGrace: grace})

			waitUntil(t, 30*time.Second, "the backend to settle the operation", func() bool { return tc.settled(h, opID, csID) })
			landed := cs.landed()
			if landed.IsZero() {
				t.Fatal("no read of Cluster Service began inside the window; the test proves nothing")
			}
			if since := landed.Sub(start); since >= grace {
				t.Fatalf("the create landed %s after the operation started, past the grace (%s)", since, grace)
			}
			if !tc.ok(h, opID, csID) {
				t.Fatalf("operation %s, cluster %s left in Cluster Service, after a create that landed %s into the %s grace",
					h.operation(opID).Status, csID, landed.Sub(start).Round(time.Millisecond), grace)
			}
		})
	}
}
