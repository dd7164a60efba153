package frontend

import (
	"slices"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/internal/armdoc"
)

// TestDeletedSubscriptionDeletesItsClusters: ARM's Deleted notification starts the delete of
// every cluster of the subscription, however the notification's path spells the subscription
// ID (stored IDs are lower case; ARM IDs are case-insensitive).
func TestDeletedSubscriptionDeletesItsClusters(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spell func(string) string
	}{
		{"as_created", func(s string) string { return s }},
		{"lower_case", strings.ToLower},
		{"upper_case", strings.ToUpper},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			path := clusterPath("rg", "c1")
			created := e.put(path, minimalBody())
			if created.code != 201 {
				t.Fatalf("create: %d %s", created.code, created.body)
			}
			e.finish(opIDFrom(t, created.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)

			e.registerSubscription(tc.spell(testSub), armdoc.SubscriptionDeleted)

			rd, _ := e.resource(path)
			if rd == nil {
				t.Fatal("cluster document gone")
			}
			if rd.ProvisioningState != armdoc.StateDeleting || rd.ActiveOperationID == "" {
				t.Fatalf("cluster after its subscription was deleted: %s (operation %q), want Deleting with a delete operation", rd.ProvisioningState, rd.ActiveOperationID)
			}
			if _, deletes, _ := e.cs.snapshot(); !slices.Contains(deletes, rd.InternalID) {
				t.Fatalf("DeleteCluster calls %v, want one for %s", deletes, rd.InternalID)
			}
		})
	}
}
