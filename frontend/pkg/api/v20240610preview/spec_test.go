package v20240610preview

import (
	"slices"
	"testing"
)

// TestPatchPathsAreTheSpecs: what a cluster PATCH body may hold (updatePaths, in convert.go) is
// the specification's HcpOpenShiftClusterUpdate of this version (generated).
func TestPatchPathsAreTheSpecs(t *testing.T) {
	got := slices.Sorted(slices.Values(updatePaths))
	if !slices.Equal(got, specClusterUpdatePaths) {
		t.Errorf("updatePaths = %q,\nthe specification's HcpOpenShiftClusterUpdate = %q", got, specClusterUpdatePaths)
	}
}
