package api_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/fieldcheck"
)

// TestIdentityMapsAreCounted pins, for every api-version, that each identity map a cluster or a
// node pool takes holds at most fieldcheck.MaxIdentities entries: one more is a 400 naming the
// map (its entries then left unchecked), on a create and on a write to a stored cluster, where a
// body of thousands used to be stored whole.
func TestIdentityMapsAreCounted(t *testing.T) {
	const max = fieldcheck.MaxIdentities
	rid := func(i int) string {
		return fmt.Sprintf("/subscriptions/s/resourceGroups/r/providers/Microsoft.ManagedIdentity/userAssignedIdentities/i%d", i)
	}
	assigned := func(n int) map[string]any { // identity.userAssignedIdentities of n identities
		m := map[string]any{}
		for i := range n {
			m[rid(i)] = map[string]any{}
		}
		return m
	}
	// The identities agree (fieldcheck's assignedIdentities): i0 is the service managed
	// identity, control plane operator op<i> has i<i+1>, and the data plane operators' identities
	// (d<i>) are not assigned. So a cluster within the bound has at most MaxIdentities-1 control
	// plane operators.
	operators := func(n int, name string, first int) map[string]any {
		m := map[string]any{}
		for i := range n {
			m[fmt.Sprintf("op%d", i)] = strings.Replace(rid(first+i), "/i", "/"+name, 1)
		}
		return m
	}
	const (
		uai = "identity.userAssignedIdentities"
		cp  = fieldcheck.OperatorIdentitiesPath + ".controlPlaneOperators"
		dp  = fieldcheck.OperatorIdentitiesPath + ".dataPlaneOperators"
	)
	tooMany := func(path string) string {
		return fmt.Sprintf("%s|At most %d entries are allowed in '%s', not %d.", path, max, path, max+1)
	}
	cases := []struct {
		name             string
		identities       int // entries of identity.userAssignedIdentities (the service managed identity is i0)
		controlPlane, dp int
		want             []string
	}{
		{name: "each_map_at_the_bound", identities: max, controlPlane: max - 1, dp: max},
		{name: "identities_over", identities: max + 1, want: []string{tooMany(uai)}},
		{name: "control_plane_over", identities: max, controlPlane: max + 1, want: []string{tooMany(cp)}},
		{name: "data_plane_over", identities: max, controlPlane: max - 1, dp: max + 1, want: []string{tooMany(dp)}},
		{name: "every_map_over", identities: max + 1, controlPlane: max + 1, dp: max + 1, want: []string{tooMany(cp), tooMany(dp), tooMany(uai)}},
	}
	for _, name := range api.Versions() {
		cv, _ := api.Lookup(name)
		for _, tc := range cases {
			t.Run(name+"/cluster/"+tc.name, func(t *testing.T) {
				body := withValue(t, clusterBodyFor(name), uai, assigned(tc.identities))
				body = withValue(t, string(body), cp, operators(tc.controlPlane, "i", 1))
				body = withValue(t, string(body), dp, operators(tc.dp, "d", 0))
				body = withValue(t, string(body), fieldcheck.OperatorIdentitiesPath+".serviceManagedIdentity", rid(0))
				stored, err := cv.DecodeCluster([]byte(clusterBodyFor(name)))
				if err != nil {
					t.Fatal(err)
				}
				_, err = cv.DecodeCluster(body)
				_, updateErr := cv.DecodeClusterUpdate(body, stored) // a replace, or a PATCH's merged body
				for _, err := range []error{err, updateErr} {
					if got, want := sortedLines(problems(t, err)), sortedLines(strings.Join(tc.want, "\n")); got != want {
						t.Errorf("problems:\n  %s\nwant:\n  %s", strings.ReplaceAll(got, "\n", "\n  "), strings.ReplaceAll(want, "\n", "\n  "))
					}
				}
			})
		}
		nv, ok := api.LookupNodePool(name)
		if !ok {
			continue
		}
		for _, n := range []int{max, max + 1} {
			t.Run(fmt.Sprintf("%s/nodepool/%d_identities", name, n), func(t *testing.T) {
				body := withValue(t, nodePoolBody, "identity", map[string]any{"type": "UserAssigned", "userAssignedIdentities": assigned(n)})
				_, err := nv.DecodeNodePool(body, nil)
				want := ""
				if n > max {
					want = tooMany(uai)
				}
				if got := problems(t, err); got != want {
					t.Errorf("problems:\n  %s\nwant:\n  %s", got, want)
				}
			})
		}
	}
}

// sortedLines is s's lines in order, so a test pins which problems come, not their order.
func sortedLines(s string) string {
	lines := strings.Split(s, "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
