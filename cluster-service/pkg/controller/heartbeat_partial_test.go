package controller_test

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/controller"
	"github.com/openhcp/openhcp/cluster-service/pkg/maestro"
	"github.com/openhcp/openhcp/cluster-service/pkg/placement"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/internal/envelope/envelopetest"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// restartedAgentWorks is a fake WorkClient (no Maestro or agent here) that plays an agent just
// restarted: the work it stores is reported on at its current generation, applied, but without
// the HostedCluster's feedback yet (a partial report). It counts republishes.
type restartedAgentWorks struct {
	controller.WorkClient
	mu          sync.Mutex
	work        *workv1.ManifestWork
	republished int
}

func (w *restartedAgentWorks) Apply(_ context.Context, _ string, work *workv1.ManifestWork) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.work = work.DeepCopy()
	w.work.Generation = 3
	return nil
}

func (w *restartedAgentWorks) Get(context.Context, string, string) (*workv1.ManifestWork, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.work.DeepCopy()
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[maestro.AnnotationStatusGeneration] = strconv.FormatInt(out.Generation, 10)
	out.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestWorkComplete", LastTransitionTime: metav1.Now()}}
	return out, nil
}

func (w *restartedAgentWorks) Republish(context.Context, string, string) (int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.republished++
	return w.work.Generation, nil
}

// TestNoHeartbeatOnAPartialReport: a READY cluster whose last feedback is long past the
// heartbeat period, whose agent answers with a partial report (caught up on the generation,
// no HostedCluster feedback yet, as after a restart). The stored status stands and no heartbeat
// is sent: the agent's full report follows without one.
func TestNoHeartbeatOnAPartialReport(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	st, err := store.Open(ctx, pgservertest.NewDatabase(t, pgservertest.Start(t)), log, envelopetest.Keyring(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.RegisterShard(ctx, placement.Shard{Name: shard, MaxClusters: 10}); err != nil {
		t.Fatal(err)
	}
	in := newCluster(60, "partial")
	cl, _, err := st.CreateCluster(ctx, &store.Cluster{ID: in.Id, ARMResourceID: in.ArmResourceId, Namespace: "ocm-dev-" + in.Id, Spec: in.Spec}, placement.LeastLoaded{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 27, 5, 0, 0, 0, time.UTC)
	ready := &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY, Applied: true, CurrentVersion: "4.19.17",
		Conditions:   []*csv1.Condition{{Type: "Available", Status: "True", Reason: "AsExpected", LastTransitionTime: timestamppb.New(t0)}},
		FeedbackTime: timestamppb.New(t0), FeedbackGeneration: 2}
	cl, err = st.UpdateStatus(ctx, cl.ID, cl.Revision, ready)
	if err != nil {
		t.Fatal(err)
	}
	works := &restartedAgentWorks{}
	c := controller.New(st, works, controller.Config{FeedbackHeartbeat: time.Minute, StatusFromMaestroOnly: true,
		Now: func() time.Time { return t0.Add(time.Hour) }}, log)
	if _, err := c.Reconcile(ctx, cl.ID); err != nil {
		t.Fatal(err)
	}
	after, err := st.GetCluster(ctx, cl.ID)
	if err != nil {
		t.Fatal(err)
	}
	if works.work == nil {
		t.Fatal("the reconcile applied no work")
	}
	if works.republished != 0 || after.Status.GetState() != csv1.ClusterState_CLUSTER_STATE_READY || after.Revision != cl.Revision {
		t.Fatalf("after a partial report: %d republishes, state %s, revision %d (was %d); want none, READY, unchanged",
			works.republished, after.Status.GetState(), after.Revision, cl.Revision)
	}
}
