package api_test

import (
	"errors"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
)

// TestClusterIdentityTypeIsRequired: ARM's ManagedServiceIdentity (common types) requires type,
// so a cluster body whose identity has none, or a null one, is refused naming identity.type, in
// every api-version, on a create and on a write over a stored cluster, as a node pool's is.
func TestClusterIdentityTypeIsRequired(t *testing.T) {
	for _, name := range api.Versions() {
		cv, _ := api.Lookup(name)
		body := clusterBodyFor(name)
		stored, err := cv.DecodeCluster([]byte(body))
		if err != nil {
			t.Fatalf("%s: the valid body: %v", name, err)
		}
		for _, tc := range []struct {
			name string
			body []byte
		}{
			{"without", withoutKey(t, body, "identity.type")},
			{"null", withValue(t, body, "identity.type", nil)},
		} {
			for _, write := range []struct {
				name   string
				decode func([]byte) (*api.Cluster, error)
			}{
				{"create", cv.DecodeCluster},
				{"replace", func(b []byte) (*api.Cluster, error) { return cv.DecodeClusterUpdate(b, stored) }},
			} {
				_, err := write.decode(tc.body)
				var ce *arm.CloudError
				if !errors.As(err, &ce) {
					t.Errorf("%s %s %s: got %v, want a 400 naming identity.type", name, write.name, tc.name, err)
					continue
				}
				targets := []string{ce.Target}
				for _, d := range ce.Details {
					targets = append(targets, d.Target)
				}
				found := false
				for _, tg := range targets {
					found = found || tg == "identity.type"
				}
				if ce.StatusCode != 400 || !found {
					t.Errorf("%s %s %s: got %d %v, want a 400 naming identity.type", name, write.name, tc.name, ce.StatusCode, targets)
				}
			}
		}
	}
}
