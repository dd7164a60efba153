package mgmtcluster_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/mgmtclustertest"
)

// fakeBundles is a named fake of Maestro's resource-bundle lookup: the set of bundle IDs it
// holds, and IDs whose lookup fails.
type fakeBundles struct {
	mu      sync.Mutex
	held    map[string]bool
	failing map[string]bool
	lookups map[string]int
}

func (f *fakeBundles) BundleExists(_ context.Context, id string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lookups[id]++
	if f.failing[id] {
		return false, errors.New("fake Maestro: lookup failed")
	}
	return f.held[id], nil
}

// TestOrphanedAppliedWorkSweeper runs the sweeper against a real kube-apiserver with the
// AppliedManifestWork CRD: an AppliedManifestWork whose resource bundle Maestro no longer has
// (the pinned agent reported its work deleted without cleaning up, docs/reliability.md defect 5)
// is deleted once the absence has been seen for Confirm; every other one is kept.
func TestOrphanedAppliedWorkSweeper(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	mc := mgmtclustertest.Start(ctx, t, "sweep")
	dyn, err := dynamic.NewForConfig(mc.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	amws := dyn.Resource(mgmtcluster.AppliedManifestWorkGVR)

	const confirm = time.Minute
	for _, tc := range []struct {
		name     string
		work     string
		failing  bool
		sweeps   []time.Duration
		held     []bool // whether Maestro holds the bundle at each sweep
		wantGone bool
		// wantLookups, when not 0, is how many times the bundle must have been looked up.
		wantLookups int
	}{
		{name: "bundle_gone_for_confirm_period_is_deleted", work: "w-orphan", sweeps: []time.Duration{0, confirm}, held: []bool{false, false}, wantGone: true},
		{name: "bundle_gone_but_not_yet_confirmed_is_kept", work: "w-young", sweeps: []time.Duration{0, confirm / 2}, held: []bool{false, false}},
		{name: "bundle_held_by_maestro_is_kept", work: "w-live", sweeps: []time.Duration{0, confirm, 2 * confirm}, held: []bool{true, true, true}},
		{name: "failed_lookup_is_kept", work: "w-unknown", failing: true, sweeps: []time.Duration{0, confirm, 2 * confirm}, held: []bool{false, false, false}},
		{name: "bundle_back_before_confirm_restarts_the_clock", work: "w-back", sweeps: []time.Duration{0, confirm / 2, confirm}, held: []bool{false, true, false}},
		{name: "bundle_gone_after_it_was_held_is_deleted_once_rechecked_and_confirmed", work: "w-later",
			sweeps: []time.Duration{0, 2 * time.Minute, 3 * time.Minute}, held: []bool{true, false, false}, wantGone: true},
		{name: "held_bundle_is_not_looked_up_again_before_recheck", work: "w-quiet",
			sweeps: []time.Duration{0, 30 * time.Second, 50 * time.Second}, held: []bool{true, false, false}, wantLookups: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bundles := &fakeBundles{held: map[string]bool{}, failing: map[string]bool{}, lookups: map[string]int{}}
			if tc.failing {
				bundles.failing[tc.work] = true
			}
			name := "hubhash-" + tc.work
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "work.open-cluster-management.io/v1", "kind": "AppliedManifestWork",
				"metadata": map[string]any{"name": name},
				"spec":     map[string]any{"hubHash": "hubhash", "agentID": "agent", "manifestWorkName": tc.work},
			}}
			if _, err := amws.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = amws.Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{}) }()
			s, err := mgmtcluster.NewOrphanedAppliedWorkSweeper(mgmtcluster.OrphanedAppliedWorkSweeperOptions{
				Bundles: bundles, Clusters: map[string]*rest.Config{"sweep": mc.RESTConfig()}, Confirm: confirm, RecheckHeld: time.Minute,
			})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			for i, at := range tc.sweeps {
				bundles.mu.Lock()
				bundles.held[tc.work] = tc.held[i]
				bundles.mu.Unlock()
				if err := s.Sweep(ctx, start.Add(at)); err != nil && !tc.failing {
					t.Fatalf("sweep %d: %v", i, err)
				}
			}
			_, err = amws.Get(ctx, name, metav1.GetOptions{})
			gone := apierrors.IsNotFound(err)
			if err != nil && !gone {
				t.Fatal(err)
			}
			if gone != tc.wantGone {
				t.Errorf("AppliedManifestWork %s gone = %v, want %v", name, gone, tc.wantGone)
			}
			if tc.wantLookups != 0 && bundles.lookups[tc.work] != tc.wantLookups {
				t.Errorf("bundle %s looked up %d times, want %d", tc.work, bundles.lookups[tc.work], tc.wantLookups)
			}
			if want := map[bool]int{true: 1}[tc.wantGone]; s.Swept() != want {
				t.Errorf("Swept() = %d, want %d", s.Swept(), want)
			}
		})
	}
}
