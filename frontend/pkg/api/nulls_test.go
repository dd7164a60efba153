package api_test

import (
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
)

// TestNullScalarsAreRefused pins, for every api-version, that a null where only a string can
// stand (a tag's value, an operator's identity, a list's entry) is a 400 naming it: decoded
// as it was, it became "" and a tag {"a": null} was stored as a = "". A null property stays an
// absent one (properties.dns is optional).
func TestNullScalarsAreRefused(t *testing.T) {
	const cp = "properties.platform.operatorsAuthentication.userAssignedIdentities.controlPlaneOperators"
	cases := []struct {
		name  string
		path  string
		value any
		want  []string // "target|message"
	}{
		{name: "tag_value", path: "tags", value: map[string]any{"a": nil, "b": "x"}, want: []string{
			"tags[a]|The value of 'tags[a]' must be of type string, not a JSON null."}},
		{name: "operator_identity", path: cp, value: map[string]any{"ingress": nil}, want: []string{
			cp + "[ingress]|The value of '" + cp + "[ingress]' must be of type string, not a JSON null."}},
		{name: "list_entry", path: "properties.api.authorizedCidrs", value: []any{"10.0.0.0/8", nil}, want: []string{
			"properties.api.authorizedCidrs[1]|The value of 'properties.api.authorizedCidrs[1]' must be of type string, not a JSON null."}},
		{name: "null_property_is_absent", path: "properties.dns", value: nil},
	}
	for _, name := range api.Versions() {
		cv, _ := api.Lookup(name)
		for _, tc := range cases {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				body := withValue(t, clusterBodyFor(name), tc.path, tc.value)
				_, err := cv.DecodeCluster(body)
				if got, want := problems(t, err), strings.Join(tc.want, "\n"); got != want {
					t.Errorf("problems:\n  %s\nwant:\n  %s", got, want)
				}
			})
		}
		nv, ok := api.LookupNodePool(name)
		if !ok {
			continue
		}
		t.Run(name+"/nodepool_tag_value", func(t *testing.T) {
			_, err := nv.DecodeNodePool(withValue(t, nodePoolBody, "tags", map[string]any{"a": nil}), nil)
			if got, want := problems(t, err), "tags[a]|The value of 'tags[a]' must be of type string, not a JSON null."; got != want {
				t.Errorf("problems:\n  %s\nwant:\n  %s", got, want)
			}
		})
	}
}
