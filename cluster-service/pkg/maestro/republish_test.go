package maestro

import (
	"strconv"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"open-cluster-management.io/sdk-go/pkg/cloudevents/clients/utils"
)

// agentWorkControllerLooksAgain is the pinned agent's rule for queueing a work it already holds
// (ocm v1.2.1, pkg/work/spoke/controllers/manifestcontroller, onUpdateFunc): only a change of
// the spec or of the labels queues the work, and only then does the controller forget the
// work's failure backoff. A change of generation or annotations alone does neither.
func agentWorkControllerLooksAgain(old, updated *workv1.ManifestWork) bool {
	return !apiequality.Semantic.DeepEqual(updated.Spec, old.Spec) || !apiequality.Semantic.DeepEqual(updated.Labels, old.Labels)
}

func TestRepublishMakesTheAgentApplyAtOnceAndApplySeesNoChange(t *testing.T) {
	for _, tc := range []struct {
		name string
		work *workv1.ManifestWork
	}{
		{name: "work_with_labels_and_annotations", work: &workv1.ManifestWork{
			ObjectMeta: metav1.ObjectMeta{Name: "w1", Generation: 3,
				Labels:      map[string]string{"openhcp.io/cluster-id": "c1"},
				Annotations: map[string]string{"openhcp.io/spec-hash": "abc"}},
			Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{}}},
		}},
		{name: "work_without_labels_or_annotations", work: &workv1.ManifestWork{
			ObjectMeta: metav1.ObjectMeta{Name: "w2", Generation: 1},
		}},
		{name: "work_republished_before", work: &workv1.ManifestWork{
			ObjectMeta: metav1.ObjectMeta{Name: "w3", Generation: 5,
				Labels:      map[string]string{"openhcp.io/cluster-id": "c3", LabelRepublished: "4"},
				Annotations: map[string]string{AnnotationRepublishedFrom: "4"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			patch, err := republishOps(tc.work)
			if err != nil {
				t.Fatal(err)
			}
			// The patch as Maestro's clients apply it.
			got, err := utils.Patch(types.JSONPatchType, tc.work.DeepCopy(), patch)
			if err != nil {
				t.Fatalf("apply the republish patch: %v", err)
			}
			if !agentWorkControllerLooksAgain(tc.work, got) {
				t.Errorf("after the republish the labels are %v (were %v) and the spec is unchanged: the agent's work controller would not look at the work again, and a work in its failure backoff stays there", got.Labels, tc.work.Labels)
			}
			if !apiequality.Semantic.DeepEqual(got.Spec, tc.work.Spec) {
				t.Errorf("the republish changed the spec")
			}
			if want := strconv.FormatInt(tc.work.Generation, 10); got.Annotations[AnnotationRepublishedFrom] != want {
				t.Errorf("annotation %s = %q, want %s, the generation republished", AnnotationRepublishedFrom, got.Annotations[AnnotationRepublishedFrom], want)
			}
			for k, v := range tc.work.Labels {
				if k != LabelRepublished && got.Labels[k] != v {
					t.Errorf("label %s = %q after the republish, want %q kept", k, got.Labels[k], v)
				}
			}
			// Apply of the unchanged spec after a Cluster Service restart must not send it again.
			before, err := canonicalJSON(tc.work)
			if err != nil {
				t.Fatal(err)
			}
			after, err := canonicalJSON(got)
			if err != nil {
				t.Fatal(err)
			}
			if before != after {
				t.Errorf("Apply sees the republished work as changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// TestRepublishPatchOfAStaleReadIsRefused: Maestro's client applies a patch to the work as it
// reads it at patch time. A republish patch made from a read that an Apply has since overtaken
// (another Cluster Service replica's) must not apply, or it would restore the old labels and
// annotations over the Apply's; it carries the generation it read as a precondition, and
// Republish reads again and retries.
func TestRepublishPatchOfAStaleReadIsRefused(t *testing.T) {
	read := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "w1", Generation: 3,
		Labels:      map[string]string{"openhcp.io/cluster-id": "c1", "openhcp.io/spec-hash": "old"},
		Annotations: map[string]string{"openhcp.io/spec-hash": "old"}}}
	patch, err := republishOps(read)
	if err != nil {
		t.Fatal(err)
	}
	applied := read.DeepCopy()
	applied.Generation = 4
	applied.Labels["openhcp.io/spec-hash"], applied.Annotations["openhcp.io/spec-hash"] = "new", "new"
	if got, err := utils.Patch(types.JSONPatchType, applied.DeepCopy(), patch); err == nil {
		t.Fatalf("the republish patch of generation 3 applied to generation 4: labels %v, annotations %v; want it refused", got.Labels, got.Annotations)
	}
	if _, err := utils.Patch(types.JSONPatchType, read.DeepCopy(), patch); err != nil {
		t.Fatalf("the republish patch of the work it read: %v", err)
	}
}
