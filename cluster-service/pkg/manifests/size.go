package manifests

import (
	"fmt"

	workv1 "open-cluster-management.io/api/work/v1"
)

const (
	// ManifestsLimit is the most bytes the manifests of one ManifestWork may hold: the
	// ManifestWork API's validator (open-cluster-management.io/api workvalidator, "the default
	// manifest limit is 500k"), which Maestro runs on every work it is sent. A larger work is
	// refused on each apply, so its cluster or pool could never change again.
	ManifestsLimit = 500 * 1024
	// ManifestsBudget is the most a spec's work may hold when Cluster Service accepts the spec
	// (CheckSize). The 100 KiB left below ManifestsLimit are for what a write cannot know
	// exactly and is added later: the Secrets sealed to a management cluster's key (larger than
	// in clear, and different at each build), the cluster's stored keys, and fields a later
	// build adds to the same objects. A spec accepted at the budget is then still applied.
	ManifestsBudget = ManifestsLimit - 100*1024
)

// ManifestsSize is the size of w's manifests as the ManifestWork validator counts it: the sum
// of each manifest's encoded size.
func ManifestsSize(w *workv1.ManifestWork) int {
	n := 0
	for i := range w.Spec.Workload.Manifests {
		n += w.Spec.Workload.Manifests[i].Size()
	}
	return n
}

// TooLargeError is CheckSize's refusal: the work's manifests would hold Size bytes, more than
// ManifestsBudget.
type TooLargeError struct {
	Work string
	Size int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the work %s would hold %d bytes of manifests, more than the %d Cluster Service accepts (Maestro refuses a work over %d)",
		e.Work, e.Size, ManifestsBudget, ManifestsLimit)
}

// CheckSize refuses (*TooLargeError) a work whose manifests exceed ManifestsBudget.
func CheckSize(w *workv1.ManifestWork) error {
	if n := ManifestsSize(w); n > ManifestsBudget {
		return &TooLargeError{Work: w.Name, Size: n}
	}
	return nil
}
