package api_test

import (
	"encoding/json"
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

// TestStoredClusterWithoutIdentityType: a cluster stored before identity.type was required may
// have none. Read, it takes the type its identities imply (UserAssigned when it has user-assigned
// identities, as a cluster's operators need them; None without), so a GET shows the type the
// schema requires and a PATCH of its tags alone is not refused for a property the caller did not
// send, in every api-version.
func TestStoredClusterWithoutIdentityType(t *testing.T) {
	id, _ := arm.ParseResourceID("/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c")
	for _, d := range storedClusterDocuments {
		var doc map[string]any
		if err := json.Unmarshal([]byte(d.doc), &doc); err != nil {
			t.Fatal(err)
		}
		identity, _ := doc["identity"].(map[string]any)
		if identity == nil || d.name == "image_digest_mirrors_one_without_mirrors" {
			// That document's mirror with no mirrors is refused by any write of the versions
			// that have mirrors (the schema's minItems 1); no write path is known to store one.
			continue
		}
		delete(identity, "type")
		b, _ := json.Marshal(doc)
		var c api.Cluster
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: read: %v", d.name, err)
		}
		c.Default()
		c.ID, c.Location = id, "eastus"
		want := "None"
		if len(c.Identity.UserAssignedIdentities) > 0 {
			want = "UserAssigned"
		}
		if c.Identity.Type != want {
			t.Errorf("%s: identity type %q, want %q", d.name, c.Identity.Type, want)
		}
		for _, name := range api.Versions() {
			cv, _ := api.Lookup(name)
			if _, err := cv.PatchCluster(&c, []byte(`{"tags":{"a":"b"}}`)); err != nil {
				t.Errorf("%s %s: a PATCH of tags: %v", d.name, name, err)
			}
		}
	}
}
