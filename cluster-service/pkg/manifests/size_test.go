package manifests

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"open-cluster-management.io/api/utils/work/v1/workvalidator"
	workv1 "open-cluster-management.io/api/work/v1"
)

// TestManifestsSizeIsTheValidators: ManifestsSize counts as the ManifestWork validator Maestro
// runs does, and ManifestsLimit is its limit: around the limit, the validator refuses exactly the
// works ManifestsSize puts over it.
func TestManifestsSizeIsTheValidators(t *testing.T) {
	var under, over bool
	for pad := ManifestsLimit - 200; pad < ManifestsLimit; pad++ {
		raw := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"a":%q}}`, strings.Repeat("p", pad))
		w := &workv1.ManifestWork{Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: []byte(raw)}}}}}}
		refused := workvalidator.ManifestValidator.ValidateManifests(w.Spec.Workload.Manifests) != nil
		if n := ManifestsSize(w); refused != (n > ManifestsLimit) {
			t.Fatalf("a work of %d bytes: the validator refuses it = %v, ManifestsSize over the limit = %v", n, refused, n > ManifestsLimit)
		}
		under, over = under || !refused, over || refused
	}
	if !under || !over {
		t.Fatalf("the sizes tried did not straddle the limit (some accepted: %v, some refused: %v)", under, over)
	}
}

// TestCheckSize: a work at the budget passes, one byte over is refused with its size.
func TestCheckSize(t *testing.T) {
	work := func(size int) *workv1.ManifestWork {
		// A manifest's encoded size is its bytes plus a tag and a length of 4 bytes here.
		return &workv1.ManifestWork{Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
			{RawExtension: runtime.RawExtension{Raw: []byte(strings.Repeat("x", size-4))}}}}}}
	}
	if w := work(ManifestsBudget); ManifestsSize(w) != ManifestsBudget {
		t.Fatalf("test work of %d bytes has %d", ManifestsBudget, ManifestsSize(w))
	}
	if err := CheckSize(work(ManifestsBudget)); err != nil {
		t.Fatalf("a work at the budget: %v", err)
	}
	var tooLarge *TooLargeError
	if err := CheckSize(work(ManifestsBudget + 1)); !errors.As(err, &tooLarge) || tooLarge.Size != ManifestsBudget+1 {
		t.Fatalf("a work one byte over the budget: %v", err)
	}
}
