package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
)

// TestHcpctlDayTwo scales a customer's node pool and upgrades its control plane as an SRE
// through hcpctl, and checks that Cluster Service, the management cluster and the customer's
// own ARM GET show the change; a version without an upgrade edge is refused naming --version.
// It pauses the cluster (spec.pausedUntil on the HostedCluster and NodePool), starts and
// cancels an upgrade that waits while the cluster is paused, resumes it, and then upgrades it.
func TestHcpctlDayTwo(t *testing.T) {
	const ver = "2025-12-23-preview"
	bin := hcpctlBinary(t)
	sub, rg := uuid.NewString(), "rg-hcpctl-day2"
	registerSubscription(t, sub)
	path := clusterPath(sub, rg, "day2")
	cl, mc := createCluster(t, path, clusterBody(sub, rg)) // 4.19 → 4.19.17
	poolPath := path + "/nodePools/workers"
	pool := arm(t, http.MethodPut, poolPath+"?api-version="+ver, map[string]any{"location": region.Info.Location, "properties": map[string]any{
		"version": map[string]any{"id": "4.19", "channelGroup": "stable"}, "replicas": 1, "platform": map[string]any{"vmSize": "Standard_D8s_v3"}}})
	if pool.Status != http.StatusCreated {
		t.Fatalf("PUT node pool: %d %s", pool.Status, pool.Raw)
	}
	if final := waitOperation(t, pool.Header.Get("Azure-AsyncOperation"), 3*time.Minute); final["status"] != "Succeeded" {
		t.Fatalf("node pool create ended %v: %v", final["status"], final["error"])
	}
	kubePool := func() (spec, ready int64, readyCond string, err error) {
		np, err := kube(t, mc).Resource(nodePoolGVR).Namespace(cl.GetNamespace()).Get(context.Background(), "workers", metav1.GetOptions{})
		if err != nil {
			return 0, 0, "", err
		}
		spec, _, _ = unstructured.NestedInt64(np.Object, "spec", "replicas")
		ready, _, _ = unstructured.NestedInt64(np.Object, "status", "replicas")
		return spec, ready, condition(*np, "Ready"), nil
	}
	// The pool is up on the management cluster before an SRE touches it.
	eventually(t, time.Minute, "NodePool Ready with 1 replica", func() error {
		if spec, ready, cond, err := kubePool(); err != nil || spec != 1 || ready != 1 || cond != "True" {
			return fmt.Errorf("NodePool spec.replicas %d status.replicas %d Ready %q (%v)", spec, ready, cond, err)
		}
		return nil
	})
	armProps := func(p string) map[string]any {
		t.Helper()
		r := arm(t, http.MethodGet, p+"?api-version="+ver, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", p, r.Status, r.Raw)
		}
		return r.Body["properties"].(map[string]any)
	}
	reason := "e2e day-2 " + uuid.NewString()

	t.Run("nodepool_scale_shows_in_the_customer_arm_get_and_on_the_management_cluster", func(t *testing.T) {
		out, stderr, code := hcpctl(t, bin, "--as", "sre-admin", "nodepool", "scale", poolPath, "--replicas", "3", "--reason", reason)
		if code != 0 || !strings.HasPrefix(out, "KIND") || !strings.Contains(out, "updated") {
			t.Fatalf("exit %d:\n%s%s", code, out, stderr)
		}
		t.Logf("hcpctl nodepool scale:\n%s", out)
		if got := armProps(poolPath)["replicas"]; got != 3.0 {
			t.Fatalf("the customer's GET shows replicas %v, want 3", got)
		}
		eventually(t, 3*time.Minute, "NodePool with 3 ready replicas", func() error {
			spec, ready, _, err := kubePool()
			if err != nil {
				return err
			}
			if spec != 3 || ready != 3 {
				return fmt.Errorf("NodePool %s/workers spec.replicas %d status.replicas %d, want 3 and 3", cl.GetNamespace(), spec, ready)
			}
			return nil
		})
		out, _, code = hcpctl(t, bin, "audit", "--person", "alice", "--target", strings.TrimPrefix(poolPath, "/"), "-o", "json")
		var l adminapi.AuditList
		if code != 0 || json.Unmarshal([]byte(out), &l) != nil || len(l.Entries) != 2 || l.Entries[0].Reason != reason || l.Entries[0].Status != 200 {
			t.Fatalf("audit of the scale: exit %d: %s", code, out)
		}
	})

	t.Run("readonly_may_not_scale", func(t *testing.T) {
		_, stderr, code := hcpctl(t, bin, "nodepool", "scale", poolPath, "--replicas", "4", "--reason", reason)
		if code != 1 || !strings.Contains(stderr, "Forbidden (HTTP 403)") {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	})

	t.Run("upgrade_without_an_edge_names_the_flag", func(t *testing.T) {
		_, stderr, code := hcpctl(t, bin, "--as", "sre-admin", "upgrade", "start", path, "--version", "4.21.0", "--reason", reason)
		if code != 1 || !strings.Contains(stderr, "InvalidRequest (HTTP 400)") || !strings.Contains(stderr, "Fix --version") {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	})

	t.Run("unknown_id_is_named", func(t *testing.T) {
		missing := path + "/nodePools/nope"
		_, stderr, code := hcpctl(t, bin, "--as", "sre-admin", "nodepool", "scale", missing, "--replicas", "2", "--reason", reason)
		if code != 1 || !strings.Contains(stderr, "NotFound (HTTP 404)") || !strings.Contains(stderr, strings.TrimPrefix(missing, "/")) {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	})

	t.Run("pause_holds_an_upgrade_which_is_canceled_and_resume_lets_it_reconcile", func(t *testing.T) {
		ctx := context.Background()
		paused := func(want string) error {
			hcs := hostedClusters(t, mc, cl.GetId())
			np, err := kube(t, mc).Resource(nodePoolGVR).Namespace(cl.GetNamespace()).Get(ctx, "workers", metav1.GetOptions{})
			if err != nil || len(hcs) != 1 {
				return fmt.Errorf("%d HostedClusters, NodePool: %v", len(hcs), err)
			}
			hcPause, _, _ := unstructured.NestedString(hcs[0].Object, "spec", "pausedUntil")
			npPause, _, _ := unstructured.NestedString(np.Object, "spec", "pausedUntil")
			active := condition(hcs[0], "ReconciliationActive")
			if hcPause != want || npPause != want || (want == "true") != (active == "False") {
				return fmt.Errorf("HostedCluster pausedUntil %q (ReconciliationActive %s), NodePool %q; want %q", hcPause, active, npPause, want)
			}
			return nil
		}
		out, stderr, code := hcpctl(t, bin, "--as", "sre-admin", "cluster", "pause", path, "--reason", reason)
		if code != 0 || !strings.Contains(out, "PAUSED UNTIL") || !strings.Contains(out, "true") {
			t.Fatalf("exit %d:\n%s%s", code, out, stderr)
		}
		t.Logf("hcpctl cluster pause:\n%s", out)
		eventually(t, time.Minute, "the pause on the management cluster", func() error { return paused("true") })
		// Paused, the cluster is not ready, so an upgrade waits (PENDING) and can be canceled.
		out, stderr, code = hcpctl(t, bin, "--as", "sre-admin", "upgrade", "start", path, "--version", "4.20.3", "--reason", reason)
		if code != 0 || !strings.Contains(out, "pending → 4.20.3") {
			t.Fatalf("upgrade while paused: exit %d:\n%s%s", code, out, stderr)
		}
		out, stderr, code = hcpctl(t, bin, "--as", "sre-admin", "upgrade", "cancel", path, "--reason", reason)
		if code != 0 || !strings.Contains(out, "failed → 4.20.3") {
			t.Fatalf("upgrade cancel: exit %d:\n%s%s", code, out, stderr)
		}
		t.Logf("hcpctl upgrade cancel:\n%s", out)
		if got := armProps(path)["version"].(map[string]any)["id"]; got != "4.19.17" {
			t.Fatalf("after the cancel the customer's GET shows version %v, want 4.19.17", got)
		}
		if p := csClusters(t, path)[0].GetStatus().GetUpgrade(); p.GetState().String() != "UPGRADE_POLICY_STATE_FAILED" || !strings.Contains(p.GetMessage(), "canceled") {
			t.Fatalf("upgrade policy after the cancel: %v", p)
		}
		out, stderr, code = hcpctl(t, bin, "--as", "sre-admin", "cluster", "resume", cl.GetId(), "--reason", reason)
		if code != 0 {
			t.Fatalf("exit %d:\n%s%s", code, out, stderr)
		}
		eventually(t, time.Minute, "the resume on the management cluster", func() error { return paused("") })
		eventually(t, 2*time.Minute, "the cluster ready again", func() error {
			if st := csClusters(t, path)[0].GetStatus(); st.GetState().String() != "CLUSTER_STATE_READY" {
				return fmt.Errorf("state %s", st.GetState())
			}
			return nil
		})
	})

	t.Run("control_plane_upgrade_shows_in_the_customer_arm_get_and_completes", func(t *testing.T) {
		out, stderr, code := hcpctl(t, bin, "--as", "sre-admin", "upgrade", "start", path, "--version", "4.20.3", "--reason", reason, "-o", "json")
		var ch adminapi.Change
		if code != 0 || json.Unmarshal([]byte(out), &ch) != nil || ch.Kind != adminapi.KindCluster || ch.Upgrade == nil || ch.Upgrade.ToVersion != "4.20.3" || ch.ARMDocument != adminapi.ARMUpdated {
			t.Fatalf("exit %d:\n%s%s", code, out, stderr)
		}
		props := armProps(path)
		if got := props["version"].(map[string]any)["id"]; got != "4.20.3" {
			t.Fatalf("the customer's GET shows version %v, want 4.20.3", got)
		}
		eventually(t, 4*time.Minute, "control plane at 4.20.3", func() error {
			if got := csClusters(t, path)[0].GetStatus().GetCurrentVersion(); got != "4.20.3" {
				return fmt.Errorf("current version %s", got)
			}
			return nil
		})
	})

	t.Run("drain_status_lists_the_cluster_on_its_shard", func(t *testing.T) {
		out, stderr, code := hcpctl(t, bin, "shard", "drain-status", cl.GetShard())
		if code != 0 || !strings.Contains(out, cl.GetId()) || !strings.Contains(out, "ACTIVE OPERATIONS") {
			t.Fatalf("exit %d:\n%s%s", code, out, stderr)
		}
		t.Logf("hcpctl shard drain-status:\n%s", out)
	})
}
