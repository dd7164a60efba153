package hypershiftsim_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/crds"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/hypershiftsim"
	"github.com/openhcp/openhcp/internal/secretseal"
)

const (
	image4197 = "quay.io/openshift-release-dev/ocp-release:4.19.7-multi"
	image4198 = "quay.io/openshift-release-dev/ocp-release:4.19.8-multi"

	availableDelay = 2 * time.Second
	deleteDelay    = 2 * time.Second
	poolDelay      = 1 * time.Second
	// Delays are measured on second-precision Kubernetes timestamps, so a step can come up to a
	// second early; "still not there" checks wait this much past a delay.
	settle = availableDelay + 1500*time.Millisecond
	// patience is how long a test waits for what should happen within a few seconds: generous,
	// so a busy machine (make test beside other builds) does not fail it; a passing test does
	// not wait it out.
	patience = time.Minute
)

var (
	k8s client.Client
	// unsealKey is the sim's private sealing key (Options.UnsealKey).
	unsealKey *secretseal.PrivateKey
	// flagFailed is listed in Options.FailClusters.
	flagFailed = types.NamespacedName{Namespace: "flag-failed", Name: "hc"}
)

// TestMain runs one real kube-apiserver + etcd (envtest, with the pinned binaries and the embedded
// CRDs) and one sim for all tests; each test works in its own namespace.
func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		return m.Run() // integration tests skip themselves; k8s stays nil
	}
	if f := flag.Lookup("test.fuzz"); f != nil && f.Value.String() != "" {
		// Fuzzing runs only the pure fuzz target; every fuzz worker would otherwise start
		// its own envtest apiserver before the engine could even gather its baseline.
		return m.Run()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	apiserver, etcd, err := mgmtcluster.KubeBinaries(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	assets, err := os.MkdirTemp("", "hypershiftsim-envtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(assets)
	for name, target := range map[string]string{"kube-apiserver": apiserver, "etcd": etcd} {
		if err := os.Symlink(target, filepath.Join(assets, name)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	defs, err := crds.CRDs()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets, CRDs: defs}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start envtest:", err)
		return 1
	}
	defer env.Stop()

	scheme, err := hypershiftsim.NewScheme()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if unsealKey, err = secretseal.GenerateKey(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := hypershiftsim.Setup(mgr, hypershiftsim.Options{
		AvailableDelay: availableDelay, DeleteDelay: deleteDelay, NodePoolReadyDelay: poolDelay,
		FailClusters: map[types.NamespacedName]bool{flagFailed: true},
		UnsealKey:    unsealKey,
	}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(ctx) }()
	// Tests use a direct client, not the manager's cache, so they see what the apiserver stores.
	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	cancel()
	if err := <-mgrDone; err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
	}
	return code
}

func newNamespace(t *testing.T, name string) string {
	t.Helper()
	if k8s == nil {
		t.Skip("needs a kube-apiserver and etcd; skipped in -short mode")
	}
	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}

// eventually polls get+check until check returns nil or the timeout passes.
func eventually[T client.Object](t *testing.T, obj T, timeout time.Duration, check func(T) error) T {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			last = err
		} else if last = check(obj); last == nil {
			return obj
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%s: condition not met after %s: %v", obj.GetNamespace(), obj.GetName(), timeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func cond(hc *hyperv1.HostedCluster, t hyperv1.ConditionType) *metav1.Condition {
	return meta.FindStatusCondition(hc.Status.Conditions, string(t))
}

// expect checks a condition's status (and reason, if given), and that it describes this
// generation and carries a transition time.
func expect(hc *hyperv1.HostedCluster, t hyperv1.ConditionType, status metav1.ConditionStatus, reason string) error {
	c := cond(hc, t)
	switch {
	case c == nil:
		return fmt.Errorf("no %s condition", t)
	case c.Status != status:
		return fmt.Errorf("%s=%s (%s: %s), want %s", t, c.Status, c.Reason, c.Message, status)
	case reason != "" && c.Reason != reason:
		return fmt.Errorf("%s reason %q, want %q", t, c.Reason, reason)
	case c.ObservedGeneration != hc.Generation:
		return fmt.Errorf("%s observedGeneration %d, want %d", t, c.ObservedGeneration, hc.Generation)
	case c.LastTransitionTime.IsZero():
		return fmt.Errorf("%s has no lastTransitionTime", t)
	}
	return nil
}

func all(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func hasFinalizer(o client.Object) bool {
	for _, f := range o.GetFinalizers() {
		if f == hypershiftsim.Finalizer {
			return true
		}
	}
	return false
}

func progressing(hc *hyperv1.HostedCluster) error {
	if !hasFinalizer(hc) {
		return fmt.Errorf("finalizer %s missing: %v", hypershiftsim.Finalizer, hc.Finalizers)
	}
	return all(
		expect(hc, hyperv1.HostedClusterProgressing, metav1.ConditionTrue, ""),
		expect(hc, hyperv1.HostedClusterAvailable, metav1.ConditionFalse, hyperv1.WaitingForAvailableReason),
		expect(hc, hyperv1.HostedClusterDegraded, metav1.ConditionFalse, ""),
		expect(hc, hyperv1.ValidReleaseImage, metav1.ConditionTrue, ""),
		expect(hc, hyperv1.ReconciliationActive, metav1.ConditionTrue, ""),
		expect(hc, hyperv1.ClusterVersionAvailable, metav1.ConditionUnknown, ""),
		historyHead(hc, configv1.PartialUpdate, "4.19.7"),
	)
}

func available(version string) func(*hyperv1.HostedCluster) error {
	return func(hc *hyperv1.HostedCluster) error {
		return all(
			expect(hc, hyperv1.HostedClusterAvailable, metav1.ConditionTrue, hyperv1.AsExpectedReason),
			expect(hc, hyperv1.HostedClusterProgressing, metav1.ConditionFalse, hyperv1.AsExpectedReason),
			expect(hc, hyperv1.HostedClusterDegraded, metav1.ConditionFalse, ""),
			expect(hc, hyperv1.ValidHostedClusterConfiguration, metav1.ConditionTrue, ""),
			expect(hc, hyperv1.SupportedHostedCluster, metav1.ConditionTrue, ""),
			expect(hc, hyperv1.ClusterVersionAvailable, metav1.ConditionTrue, ""),
			expect(hc, hyperv1.ClusterVersionProgressing, metav1.ConditionFalse, ""),
			historyHead(hc, configv1.CompletedUpdate, version),
		)
	}
}

func historyHead(hc *hyperv1.HostedCluster, state configv1.UpdateState, version string) error {
	v := hc.Status.Version
	if v == nil || len(v.History) == 0 {
		return fmt.Errorf("no version history")
	}
	h := v.History[0]
	switch {
	case h.State != state || h.Version != version:
		return fmt.Errorf("history[0] = %s %s, want %s %s", h.State, h.Version, state, version)
	case h.Image != hc.Spec.Release.Image || v.Desired.Image != hc.Spec.Release.Image:
		return fmt.Errorf("history image %q desired %q, want %q", h.Image, v.Desired.Image, hc.Spec.Release.Image)
	case v.Desired.Version != version:
		return fmt.Errorf("desired version %q, want %q", v.Desired.Version, version)
	case h.StartedTime.IsZero():
		return fmt.Errorf("history[0] has no startedTime")
	case state == configv1.CompletedUpdate && h.CompletionTime == nil:
		return fmt.Errorf("completed history[0] has no completionTime")
	case v.ObservedGeneration != hc.Generation:
		return fmt.Errorf("version observedGeneration %d, want %d", v.ObservedGeneration, hc.Generation)
	}
	return nil
}

func TestHostedCluster(t *testing.T) {
	tests := []struct {
		name        string
		namespace   string
		clusterName string
		image       string
		annotations map[string]string
		run         func(t *testing.T, hc *hyperv1.HostedCluster)
	}{{
		name: "becomes_available_after_delay_with_completed_version_history",
		run: func(t *testing.T, hc *hyperv1.HostedCluster) {
			eventually(t, hc, patience, progressing)
			seenProgressing := time.Now()
			eventually(t, hc, patience, available("4.19.7"))
			// Second-precision timestamps can make it up to a second early, never much more.
			if waited := time.Since(seenProgressing); hc.Status.Version.History[0].CompletionTime.Sub(hc.Status.Version.History[0].StartedTime.Time) < availableDelay-time.Second {
				t.Errorf("Available after %s (completion %s, started %s), want about %s",
					waited, hc.Status.Version.History[0].CompletionTime, hc.Status.Version.History[0].StartedTime, availableDelay)
			}
			if ep := hc.Status.ControlPlaneEndpoint; ep.Host != "api."+hc.Name+".example.openhcp.test" || ep.Port != 6443 {
				t.Errorf("controlPlaneEndpoint %+v", ep)
			}
			if hc.Status.PayloadArch != hyperv1.Multi {
				t.Errorf("payloadArch %q, want Multi", hc.Status.PayloadArch)
			}
			if len(hc.Status.Version.History) != 1 {
				t.Errorf("history %+v, want one entry", hc.Status.Version.History)
			}
		},
	}, {
		name:        "fail_annotation_ends_degraded_with_message",
		annotations: map[string]string{hypershiftsim.FailAnnotation: "etcd quorum lost"},
		run: func(t *testing.T, hc *hyperv1.HostedCluster) {
			degraded := func(hc *hyperv1.HostedCluster) error {
				if c := cond(hc, hyperv1.HostedClusterDegraded); c == nil || c.Message != "etcd quorum lost" {
					return fmt.Errorf("Degraded condition %+v, want message %q", c, "etcd quorum lost")
				}
				return all(
					expect(hc, hyperv1.HostedClusterDegraded, metav1.ConditionTrue, hypershiftsim.ReasonSimulatedFailure),
					expect(hc, hyperv1.HostedClusterAvailable, metav1.ConditionFalse, ""),
					expect(hc, hyperv1.HostedClusterProgressing, metav1.ConditionFalse, hyperv1.BlockedReason),
				)
			}
			eventually(t, hc, patience, degraded)
			time.Sleep(settle)
			eventually(t, hc, time.Second, degraded)
			if err := historyHead(hc, configv1.PartialUpdate, "4.19.7"); err != nil {
				t.Error(err)
			}
		},
	}, {
		name:        "fail_clusters_flag_ends_degraded",
		namespace:   flagFailed.Namespace,
		clusterName: flagFailed.Name,
		run: func(t *testing.T, hc *hyperv1.HostedCluster) {
			eventually(t, hc, patience, func(hc *hyperv1.HostedCluster) error {
				return all(
					expect(hc, hyperv1.HostedClusterDegraded, metav1.ConditionTrue, hypershiftsim.ReasonSimulatedFailure),
					expect(hc, hyperv1.HostedClusterAvailable, metav1.ConditionFalse, ""),
				)
			})
		},
	}, {
		name:        "stuck_annotation_stays_progressing",
		annotations: map[string]string{hypershiftsim.StuckAnnotation: "true"},
		run: func(t *testing.T, hc *hyperv1.HostedCluster) {
			eventually(t, hc, patience, progressing)
			time.Sleep(settle)
			eventually(t, hc, time.Second, progressing)
		},
	}, {
		name:  "unresolvable_release_image_blocks_rollout",
		image: "quay.io/openshift-release-dev/ocp-release@sha256:0123456789abcdef",
		run: func(t *testing.T, hc *hyperv1.HostedCluster) {
			eventually(t, hc, patience, func(hc *hyperv1.HostedCluster) error {
				return all(
					expect(hc, hyperv1.ValidReleaseImage, metav1.ConditionFalse, hyperv1.InvalidImageReason),
					expect(hc, hyperv1.HostedClusterProgressing, metav1.ConditionFalse, hyperv1.BlockedReason),
					expect(hc, hyperv1.HostedClusterAvailable, metav1.ConditionFalse, ""),
				)
			})
			if hc.Status.Version != nil {
				t.Errorf("version status %+v for an image without a version", hc.Status.Version)
			}
		},
	}, {
		name: "upgrade_prepends_partial_entry_and_stays_available",
		run: func(t *testing.T, hc *hyperv1.HostedCluster) {
			eventually(t, hc, patience, available("4.19.7"))
			hc.Spec.Release.Image = image4198
			if err := k8s.Update(context.Background(), hc); err != nil {
				t.Fatal(err)
			}
			eventually(t, hc, patience, func(hc *hyperv1.HostedCluster) error {
				return all(
					historyHead(hc, configv1.PartialUpdate, "4.19.8"),
					expect(hc, hyperv1.HostedClusterAvailable, metav1.ConditionTrue, ""),
					expect(hc, hyperv1.HostedClusterProgressing, metav1.ConditionTrue, ""),
					expect(hc, hyperv1.ClusterVersionProgressing, metav1.ConditionTrue, ""),
				)
			})
			eventually(t, hc, patience, available("4.19.8"))
			h := hc.Status.Version.History
			if len(h) != 2 || h[1].Version != "4.19.7" || h[1].State != configv1.CompletedUpdate {
				t.Errorf("history %+v, want 4.19.8 then Completed 4.19.7", h)
			}
		},
	}, {
		name: "delete_removes_finalizer_after_delay",
		run: func(t *testing.T, hc *hyperv1.HostedCluster) {
			eventually(t, hc, patience, progressing)
			if err := k8s.Delete(context.Background(), hc); err != nil {
				t.Fatal(err)
			}
			deleted := time.Now()
			got := &hyperv1.HostedCluster{}
			if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(hc), got); err != nil {
				t.Fatalf("HostedCluster gone right after delete, want it held by the finalizer: %v", err)
			}
			if got.DeletionTimestamp == nil || !hasFinalizer(got) {
				t.Fatalf("deletionTimestamp %v finalizers %v", got.DeletionTimestamp, got.Finalizers)
			}
			waitGone(t, hc, patience)
			if d := time.Since(deleted); d < deleteDelay-time.Second {
				t.Errorf("gone %s after delete, want about %s", d, deleteDelay)
			}
		},
	}}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ns := tt.namespace
			if ns == "" {
				ns = fmt.Sprintf("hc-%d", i)
			}
			newNamespace(t, ns)
			name := tt.clusterName
			if name == "" {
				name = "hc"
			}
			image := tt.image
			if image == "" {
				image = image4197
			}
			hc := hypershiftsim.ExampleHostedCluster(ns, name, image)
			hc.Annotations = tt.annotations
			if err := k8s.Create(context.Background(), hc); err != nil {
				t.Fatal(err)
			}
			tt.run(t, hc)
		})
	}
}

func waitGone(t *testing.T, obj client.Object, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%s still there after %s (err %v, finalizers %v)", obj.GetNamespace(), obj.GetName(), timeout, err, obj.GetFinalizers())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func npCond(np *hyperv1.NodePool, t string) *hyperv1.NodePoolCondition {
	for i := range np.Status.Conditions {
		if np.Status.Conditions[i].Type == t {
			return &np.Status.Conditions[i]
		}
	}
	return nil
}

func poolAt(replicas int32, version string) func(*hyperv1.NodePool) error {
	return func(np *hyperv1.NodePool) error {
		if !hasFinalizer(np) {
			return fmt.Errorf("finalizer missing: %v", np.Finalizers)
		}
		if np.Status.Replicas != replicas || np.Status.Version != version {
			return fmt.Errorf("replicas %d version %q, want %d %q", np.Status.Replicas, np.Status.Version, replicas, version)
		}
		for _, typ := range []string{hyperv1.NodePoolReadyConditionType, hyperv1.NodePoolAllMachinesReadyConditionType, hyperv1.NodePoolAllNodesHealthyConditionType, hyperv1.NodePoolValidReleaseImageConditionType} {
			if c := npCond(np, typ); c == nil || c.Status != corev1.ConditionTrue || c.ObservedGeneration != np.Generation {
				return fmt.Errorf("%s = %+v, want True for generation %d", typ, c, np.Generation)
			}
		}
		if c := npCond(np, hyperv1.NodePoolUpdatingVersionConditionType); c == nil || c.Status != corev1.ConditionFalse {
			return fmt.Errorf("UpdatingVersion = %+v, want False", c)
		}
		return nil
	}
}

func TestNodePool(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		run         func(t *testing.T, hc *hyperv1.HostedCluster, np *hyperv1.NodePool)
	}{{
		name: "replicas_reach_spec_after_cluster_is_available_and_follow_scaling",
		run: func(t *testing.T, hc *hyperv1.HostedCluster, np *hyperv1.NodePool) {
			eventually(t, np, patience, func(np *hyperv1.NodePool) error {
				c := npCond(np, hyperv1.NodePoolUpdatingVersionConditionType)
				if np.Status.Replicas != 0 || c == nil || c.Status != corev1.ConditionTrue {
					return fmt.Errorf("replicas %d UpdatingVersion %+v, want 0 and True while the cluster comes up", np.Status.Replicas, c)
				}
				return nil
			})
			eventually(t, np, patience, poolAt(2, "4.19.7"))
			avail := cond(eventually(t, hc, time.Second, available("4.19.7")), hyperv1.HostedClusterAvailable)
			ready := npCond(np, hyperv1.NodePoolReadyConditionType)
			if ready.LastTransitionTime.Time.Before(avail.LastTransitionTime.Time) {
				t.Errorf("pool Ready at %s before cluster Available at %s", ready.LastTransitionTime, avail.LastTransitionTime)
			}
			np.Spec.Replicas = ptr.To[int32](3)
			if err := k8s.Update(context.Background(), np); err != nil {
				t.Fatal(err)
			}
			eventually(t, np, patience, func(np *hyperv1.NodePool) error {
				if c := npCond(np, hyperv1.NodePoolReadyConditionType); c == nil || c.Status != corev1.ConditionFalse || np.Status.Replicas != 2 {
					return fmt.Errorf("Ready %+v replicas %d, want False while scaling from 2", c, np.Status.Replicas)
				}
				return nil
			})
			eventually(t, np, patience, poolAt(3, "4.19.7"))
		},
	}, {
		name:        "pool_of_stuck_cluster_gets_no_machines",
		annotations: map[string]string{hypershiftsim.StuckAnnotation: "true"},
		run: func(t *testing.T, hc *hyperv1.HostedCluster, np *hyperv1.NodePool) {
			time.Sleep(settle + poolDelay)
			eventually(t, np, time.Second, func(np *hyperv1.NodePool) error {
				c := npCond(np, hyperv1.NodePoolReadyConditionType)
				if np.Status.Replicas != 0 || np.Status.Version != "" || c == nil || c.Status != corev1.ConditionFalse {
					return fmt.Errorf("replicas %d version %q Ready %+v, want 0, none, False", np.Status.Replicas, np.Status.Version, c)
				}
				return nil
			})
		},
	}, {
		name: "deleting_cluster_deletes_its_pools_first",
		run: func(t *testing.T, hc *hyperv1.HostedCluster, np *hyperv1.NodePool) {
			eventually(t, np, patience, poolAt(2, "4.19.7"))
			if err := k8s.Delete(context.Background(), hc); err != nil {
				t.Fatal(err)
			}
			eventually(t, np, patience, func(np *hyperv1.NodePool) error {
				if np.DeletionTimestamp == nil {
					return fmt.Errorf("NodePool not being deleted")
				}
				return nil
			})
			waitGone(t, np, patience)
			waitGone(t, hc, patience)
		},
	}}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t, fmt.Sprintf("np-%d", i))
			hc := hypershiftsim.ExampleHostedCluster(ns, "hc", image4197)
			hc.Annotations = tt.annotations
			if err := k8s.Create(context.Background(), hc); err != nil {
				t.Fatal(err)
			}
			np := hypershiftsim.ExampleNodePool(ns, "workers", "hc", image4197, 2)
			if err := k8s.Create(context.Background(), np); err != nil {
				t.Fatal(err)
			}
			tt.run(t, hc, np)
		})
	}
}

// TestHostedCluster_serverSideAppliedLikeTheMaestroAgent applies the HostedCluster the way the
// Maestro agent does (server-side apply, forced, its own field manager) and re-applies it: the
// sim's finalizer and status must survive re-applies, and a re-apply with a new release image
// must start an upgrade.
func TestHostedCluster_serverSideAppliedLikeTheMaestroAgent(t *testing.T) {
	ns := newNamespace(t, "ssa")
	ctx := context.Background()
	apply := func(image string) {
		t.Helper()
		hc := hypershiftsim.ExampleHostedCluster(ns, "hc", image)
		hc.TypeMeta = metav1.TypeMeta{APIVersion: hyperv1.GroupVersion.String(), Kind: "HostedCluster"}
		raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(hc)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: raw}
		unstructured.RemoveNestedField(u.Object, "status")
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		if err := k8s.Patch(ctx, u, client.Apply, client.FieldOwner("work-agent"), client.ForceOwnership); err != nil {
			t.Fatalf("server-side apply: %v", err)
		}
	}
	apply(image4197)
	hc := &hyperv1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hc"}}
	eventually(t, hc, patience, available("4.19.7"))

	apply(image4197)
	got := &hyperv1.HostedCluster{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(hc), got); err != nil {
		t.Fatal(err)
	}
	if !hasFinalizer(got) || available("4.19.7")(got) != nil {
		t.Fatalf("re-apply lost the sim's finalizer or status: finalizers %v, %v", got.Finalizers, available("4.19.7")(got))
	}

	apply(image4198)
	eventually(t, hc, patience, func(hc *hyperv1.HostedCluster) error {
		if len(hc.Status.Version.History) != 2 {
			return fmt.Errorf("history %+v, want the upgrade entry too", hc.Status.Version.History)
		}
		return available("4.19.8")(hc)
	})
}
