package api_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
)

// TestTagsKeepARMsLimits: Azure Resource Manager allows a resource at most 50 tags, a name of
// 1–512 characters without < > % & \ ? /, a value of at most 256 characters, and names differing
// only in case are one name. ARM enforces them before a request reaches a provider; the frontend
// serves without ARM in front of it here, so it enforces them too, for clusters and node pools,
// in every api-version, on a create and on a write over a stored resource.
func TestTagsKeepARMsLimits(t *testing.T) {
	many := func(n int) map[string]any {
		m := map[string]any{}
		for i := range n {
			m[fmt.Sprintf("k%d", i)] = "v"
		}
		return m
	}
	for _, tc := range []struct {
		name   string
		tags   map[string]any
		target string // "" accepted
	}{
		{"none", map[string]any{}, ""},
		{"fifty", many(50), ""},
		{"fifty_one", many(51), "tags"},
		{"name_of_512", map[string]any{strings.Repeat("n", 512): "v"}, ""},
		{"name_of_513", map[string]any{strings.Repeat("n", 513): "v"}, "tags"},
		{"empty_name", map[string]any{"": "v"}, "tags"},
		{"value_of_256", map[string]any{"k": strings.Repeat("v", 256)}, ""},
		{"value_of_257", map[string]any{"k": strings.Repeat("v", 257)}, "tags[k]"},
		{"empty_value", map[string]any{"k": ""}, ""},
		{"slash_in_name", map[string]any{"a/b": "v"}, "tags"},
		{"percent_in_name", map[string]any{"a%b": "v"}, "tags"},
		{"names_differing_in_case", map[string]any{"env": "a", "ENV": "b"}, "tags"},
		{"three_mb_name", map[string]any{strings.Repeat("n", 3<<20): "v"}, "tags"},
	} {
		for _, kind := range []string{"cluster", "nodepool"} {
			for _, name := range api.Versions() {
				var base string
				var decode func([]byte) error
				switch kind {
				case "cluster":
					cv, _ := api.Lookup(name)
					base = clusterBodyFor(name)
					decode = func(b []byte) error { _, err := cv.DecodeCluster(b); return err }
				case "nodepool":
					nv := npVersion(t, name)
					base = nodePoolBody
					decode = func(b []byte) error { _, err := nv.DecodeNodePool(b, nil); return err }
				}
				var doc map[string]any
				if err := json.Unmarshal([]byte(base), &doc); err != nil {
					t.Fatal(err)
				}
				doc["tags"] = tc.tags
				b, _ := json.Marshal(doc)
				err := decode(b)
				if tc.target == "" {
					if err != nil {
						t.Errorf("%s %s %s: refused: %v", kind, name, tc.name, err)
					}
					continue
				}
				var ce *arm.CloudError
				if !errors.As(err, &ce) || ce.StatusCode != 400 {
					t.Errorf("%s %s %s: got %v, want a 400 naming %s", kind, name, tc.name, err, tc.target)
					continue
				}
				found := ce.Target == tc.target
				for _, d := range ce.Details {
					found = found || d.Target == tc.target
				}
				if !found || len(ce.Message) > 2*arm.MaxErrorTextLen {
					t.Errorf("%s %s %s: got %q (%d bytes), want a 400 naming %s", kind, name, tc.name, ce.Target, len(ce.Message), tc.target)
				}
			}
		}
	}
}
