package mgmtcluster

import (
	"context"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
)

// TestChartIdentitiesRenderForTheLauncher renders the agent's and the sim's ServiceAccount and
// RBAC as `make run` does (the chart's defaults plus the identity's --set values, no config/):
// every other template of the chart must render too, since helm renders them all.
func TestChartIdentitiesRenderForTheLauncher(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, id := range []ChartIdentity{AgentIdentity("mgmt-1"), SimIdentity} {
		t.Run(id.Chart, func(t *testing.T) {
			manifests, err := renderChartIdentity(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := decodeObjects(manifests)
			if err != nil {
				t.Fatal(err)
			}
			roles := 0
			for _, o := range objs {
				switch o.(type) {
				case *rbacv1.Role, *rbacv1.ClusterRole:
					roles++
				}
			}
			if roles == 0 {
				t.Fatalf("rendered %d objects, no Role or ClusterRole", len(objs))
			}
		})
	}
}
