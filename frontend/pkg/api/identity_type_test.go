package api_test

import (
	"encoding/json"
	"errors"
	"slices"
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

// storedDataPlaneIdentity is the data plane operator's identity of storedClusterDocuments, which
// they also assign to the cluster.
const storedDataPlaneIdentity = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk"

// TestStoredClusterWithInconsistentIdentities: a cluster stored before the identity rule with
// its data plane operator's identity assigned to it takes a write that leaves its identities as
// they are (a PATCH of tags), is refused one that changes them and leaves them inconsistent
// (naming every disagreement, the old one too), and takes a PATCH that removes the assignment,
// in every api-version.
func TestStoredClusterWithInconsistentIdentities(t *testing.T) {
	id, _ := arm.ParseResourceID("/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c")
	d := storedClusterDocuments[0]
	var c api.Cluster
	if err := json.Unmarshal([]byte(d.doc), &c); err != nil {
		t.Fatalf("%s: read: %v", d.name, err)
	}
	c.Default()
	c.ID, c.Location = id, "eastus"
	const dataPlane = "properties.platform.operatorsAuthentication.userAssignedIdentities.dataPlaneOperators[disk-csi-driver]"
	const other = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/other"
	for _, name := range api.Versions() {
		cv, _ := api.Lookup(name)
		if _, err := cv.PatchCluster(&c, []byte(`{"tags":{"a":"b"}}`)); err != nil {
			t.Errorf("%s: a PATCH of tags alone: %v, want it taken", name, err)
		}
		_, err := cv.PatchCluster(&c, []byte(`{"identity":{"userAssignedIdentities":{"`+other+`":{}}}}`))
		var ce *arm.CloudError
		if !errors.As(err, &ce) || ce.StatusCode != 400 {
			t.Fatalf("%s: a PATCH assigning another identity: %v, want a 400", name, err)
		}
		var targets []string
		for _, d := range ce.Details {
			targets = append(targets, d.Target)
		}
		// Assigned, the data plane operator's identity is also an assigned identity no control
		// plane operator uses.
		want := []string{"identity.userAssignedIdentities[" + storedDataPlaneIdentity + "]", "identity.userAssignedIdentities[" + other + "]", dataPlane}
		if !slices.Equal(targets, want) {
			t.Errorf("%s: a PATCH assigning another identity: refused naming %v, want %v", name, targets, want)
		}
		next, err := cv.PatchCluster(&c, []byte(`{"tags":{"a":"b"},"identity":{"userAssignedIdentities":{"`+storedDataPlaneIdentity+`":null}}}`))
		if err != nil {
			t.Fatalf("%s: a PATCH removing the assignment: %v", name, err)
		}
		if _, ok := next.Identity.UserAssignedIdentities[storedDataPlaneIdentity]; ok || next.Tags["a"] != "b" {
			t.Errorf("%s: the PATCH gave identities %v, tags %v", name, next.Identity.UserAssignedIdentities, next.Tags)
		}
	}
}
