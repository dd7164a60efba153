package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/pki"
)

var nodePoolGVR = schema.GroupVersionResource{Group: "hypershift.openshift.io", Version: "v1beta1", Resource: "nodepools"}

func nodePoolsClient(t *testing.T) csv1.NodePoolsClient {
	t.Helper()
	// The test does what the frontend would, so it calls as the frontend's identity.
	conn, err := region.DialClusterServiceAs(pki.Frontend)
	if err != nil {
		t.Fatalf("dial cluster service: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return csv1.NewNodePoolsClient(conn)
}

// TestNodePoolThroughClusterService drives a node pool of a cluster created through ARM, with
// Cluster Service's NodePools API (the frontend does not serve node pools yet), down to the
// management cluster the cluster was placed on and back: READY with its replicas, scaled up,
// then deleted with nothing left behind.
func TestNodePoolThroughClusterService(t *testing.T) {
	sub, rg := uuid.NewString(), "rg-nodepool"
	registerSubscription(t, sub)
	path := clusterPath(sub, rg, "withpool")
	cl, mc := createCluster(t, path, clusterBody(sub, rg))
	pools := nodePoolsClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	poolID := strings.ReplaceAll(uuid.NewString(), "-", "")
	created, err := pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: &csv1.NodePool{
		Id: poolID, ClusterId: cl.GetId(), ArmResourceId: path + "/nodePools/workers",
		Spec: &csv1.NodePoolSpec{Replicas: 2, Labels: map[string]string{"tier": "web"}, Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3"}},
	}})
	if err != nil {
		t.Fatalf("create node pool: %v", err)
	}
	if created.GetSpec().GetVersionId() != cl.GetSpec().GetVersionId() {
		t.Errorf("pool version %q, want the control plane's %q", created.GetSpec().GetVersionId(), cl.GetSpec().GetVersionId())
	}
	waitPool := func(what string, cond func(*csv1.NodePool, error) bool) *csv1.NodePool {
		t.Helper()
		var last *csv1.NodePool
		var lastErr error
		deadline := time.Now().Add(3 * time.Minute)
		for time.Now().Before(deadline) {
			if last, lastErr = pools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: poolID}); cond(last, lastErr) {
				return last
			}
			time.Sleep(250 * time.Millisecond)
		}
		t.Fatalf("node pool not %s after 3m: %v, %v", what, last.GetStatus(), lastErr)
		return nil
	}
	readyWith := func(n int32) func(*csv1.NodePool, error) bool {
		return func(np *csv1.NodePool, err error) bool {
			return err == nil && np.GetStatus().GetState() == csv1.NodePoolState_NODE_POOL_STATE_READY && np.GetStatus().GetReplicas() == n
		}
	}
	kubePool := func() (*unstructured.Unstructured, error) {
		return kube(t, mc).Resource(nodePoolGVR).Namespace(cl.GetNamespace()).Get(ctx, "workers", metav1.GetOptions{})
	}

	np := waitPool("READY with 2 replicas", readyWith(2))
	if np.GetStatus().GetCurrentVersion() != cl.GetSpec().GetVersionId() {
		t.Errorf("pool runs %q, want %q", np.GetStatus().GetCurrentVersion(), cl.GetSpec().GetVersionId())
	}
	obj, err := kubePool()
	if err != nil {
		t.Fatalf("NodePool on %s: %v", mc.Name, err)
	}
	if got, _, _ := unstructured.NestedInt64(obj.Object, "status", "replicas"); got != 2 || condition(*obj, "Ready") != "True" {
		t.Fatalf("NodePool status replicas %d Ready %q", got, condition(*obj, "Ready"))
	}

	spec := proto.Clone(np.GetSpec()).(*csv1.NodePoolSpec)
	spec.Replicas = 3
	if _, err := pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: poolID, Update: csv1.FullNodePoolUpdate(spec), Revision: np.GetRevision()}); err != nil {
		t.Fatalf("scale node pool: %v", err)
	}
	waitPool("READY with 3 replicas", readyWith(3))
	if obj, err := kubePool(); err != nil {
		t.Fatal(err)
	} else if got, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas"); got != 3 {
		t.Fatalf("NodePool spec.replicas = %d after scaling to 3", got)
	}

	if _, err := pools.DeleteNodePool(ctx, &csv1.DeleteNodePoolRequest{Id: poolID}); err != nil {
		t.Fatalf("delete node pool: %v", err)
	}
	waitPool("gone", func(_ *csv1.NodePool, err error) bool { return status.Code(err) == codes.NotFound })
	eventually(t, time.Minute, "NodePool gone from the management cluster", func() error {
		if _, err := kubePool(); !apierrors.IsNotFound(err) {
			return fmt.Errorf("NodePool still there (err %v)", err)
		}
		return nil
	})
}
