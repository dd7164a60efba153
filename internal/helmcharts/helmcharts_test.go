package helmcharts

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestFindListsChartsAtEveryDepth(t *testing.T) {
	root := t.TempDir()
	for _, dir := range []string{
		"frontend/deploy",      // one deployable
		"maestro/deploy/agent", // several
		"dev-infrastructure/mgmtcluster/deploy/hypershift-sim", // one folder deeper
		"internal/deploy/mesh-policy",                          // a library chart
	} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, dir, "Chart.yaml"), []byte("name: x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Not charts: no Chart.yaml, or too deep.
	for _, dir := range []string{"backend/deploy", "a/b/c/deploy/x/y"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Find(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"dev-infrastructure/mgmtcluster/deploy/hypershift-sim", "frontend/deploy", "internal/deploy/mesh-policy", "maestro/deploy/agent"}
	if !slices.Equal(got, want) {
		t.Fatalf("Find = %v, want %v", got, want)
	}
}
