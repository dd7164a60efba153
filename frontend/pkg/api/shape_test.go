package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armspec"
)

// deepArray and deepObject nest n levels: `[[[…]]]` and `{"a":{"a":…}}`, as a property of a
// cluster body so that the decoders walk into them.
func deepArray(n int) []byte {
	return []byte(`{"tags":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`)
}

func deepObject(n int) []byte {
	return []byte(`{"properties":` + strings.Repeat(`{"a":`, n) + `1` + strings.Repeat("}", n) + `}`)
}

// clusterBodyFor is a valid cluster body for an api-version.
func clusterBodyFor(version string) string {
	if version >= "2025-12-23-preview" { // these versions require the integration subnet
		return strings.Replace(strictClusterBody, `"subnetId":`, `"vnetIntegrationSubnetId":"/subscriptions/s/resourceGroups/r/providers/Microsoft.Network/virtualNetworks/v/subnets/b","subnetId":`, 1)
	}
	return strictClusterBody
}

// allocatedBy is the bytes the heap handed out while f ran.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDeepNestingIsRefused: a body nested deeper than api.MaxDepth is refused with 400
// InvalidRequestContent by every parser of ARM bodies, and refusing it costs memory bounded
// independently of how deep it goes (the parser stops at the limit, before recursing further).
func TestDeepNestingIsRefused(t *testing.T) {
	v, _ := api.Lookup(api.Versions()[len(api.Versions())-1])
	stored, err := v.DecodeCluster([]byte(clusterBodyFor(v.String())))
	if err != nil {
		t.Fatal(err)
	}
	parsers := []struct {
		name  string
		parse func(body []byte) error
	}{
		{"decode_cluster", func(b []byte) error { _, err := v.DecodeCluster(b); return err }},
		{"decode_nodepool", func(b []byte) error { _, err := npVersion(t, v.String()).DecodeNodePool(b, nil); return err }},
		{"parse_object", func(b []byte) error { _, err := api.ParseObject(b); return err }},
		{"patch_cluster", func(b []byte) error { _, err := v.PatchCluster(stored, b); return err }},
	}
	for _, shape := range []struct {
		name string
		body []byte
	}{
		{"array_just_over_the_limit", deepArray(api.MaxDepth)},
		{"object_just_over_the_limit", deepObject(api.MaxDepth)},
		{"array_10000_deep", deepArray(10_000)},
		{"object_10000_deep", deepObject(10_000)},
		{"array_100000_deep", deepArray(100_000)},
		{"object_100000_deep", deepObject(100_000)},
	} {
		for _, p := range parsers {
			t.Run(p.name+"/"+shape.name, func(t *testing.T) {
				var err error
				alloc := allocatedBy(func() { err = p.parse(shape.body) })
				ce, ok := arm.AsCloudError(err)
				if !ok || ce.StatusCode != http.StatusBadRequest || ce.Code != arm.CodeInvalidRequestContent ||
					!strings.Contains(ce.Message, "nested deeper than") {
					t.Fatalf("got %v, want 400 InvalidRequestContent saying it is nested too deep", err)
				}
				// Generous: the refusal reads at most MaxDepth levels, whatever the body's size.
				if limit := uint64(1 << 20); alloc > limit {
					t.Fatalf("refusing a %d-byte body allocated %d bytes, more than %d", len(shape.body), alloc, limit)
				}
			})
		}
	}
}

// TestNestingWithinTheLimitIsParsed: the limit refuses only what is deeper than it.
func TestNestingWithinTheLimitIsParsed(t *testing.T) {
	// The body itself is one level, so MaxDepth-1 more fit.
	body := []byte(`{"a":` + strings.Repeat("[", api.MaxDepth-1) + strings.Repeat("]", api.MaxDepth-1) + `}`)
	if _, err := api.ParseObject(body); err != nil {
		t.Fatalf("a body %d deep is refused: %v", api.MaxDepth, err)
	}
}

// TestManyProblemsAreReportedBounded: a body of as many values as it may hold, made of one
// problem repeated (a key given again and again, unknown keys, keys in the wrong case, invalid
// list entries) is refused with a bounded list of details, not one per repetition.
func TestManyProblemsAreReportedBounded(t *testing.T) {
	v, _ := api.Lookup(api.Versions()[len(api.Versions())-1])
	repeat := func(prefix, item, suffix string) []byte {
		n := api.MaxValues - 10
		return []byte(prefix + strings.TrimSuffix(strings.Repeat(item, n), ",") + suffix)
	}
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"repeated_key", repeat(`{"tags":{`, `"a":"b",`, `}}`)},
		{"unknown_keys", repeat(`{"properties":{`, `"x":1,`, `}}`)},
		{"wrong_case_keys", repeat(`{`, `"Location":1,`, `}`)},
		{"invalid_list_entries", repeat(`{"properties":{"imageDigestMirrors":[`, `{},`, `]}}`)},
		{"invalid_node_pool_taints", repeat(`{"properties":{"taints":[`, `{},`, `]}}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if strings.Contains(tc.name, "node_pool") {
				_, err = npVersion(t, v.String()).DecodeNodePool(tc.body, nil)
			} else {
				_, err = v.DecodeCluster(tc.body)
			}
			ce, ok := arm.AsCloudError(err)
			if !ok || ce.StatusCode != http.StatusBadRequest {
				t.Fatalf("got %v, want a 400", err)
			}
			if len(ce.Details) > 100 {
				t.Fatalf("%d details for one repeated problem, want at most 100", len(ce.Details))
			}
		})
	}
}

// TestTooManyValuesAreRefused: a body of more values than api.MaxValues is refused before it
// is built, whatever the shape that holds them; the largest body the specification allows
// (every imageDigestMirrors entry with its most mirrors) is not.
func TestTooManyValuesAreRefused(t *testing.T) {
	over := api.MaxValues + 1
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"long_array", []byte(`{"a":[` + strings.TrimSuffix(strings.Repeat("0,", over), ",") + `]}`)},
		{"many_keys", func() []byte {
			var b strings.Builder
			b.WriteString(`{"tags":{`)
			for i := range over {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `"%d":""`, i)
			}
			b.WriteString(`}}`)
			return []byte(b.String())
		}()},
		{"arrays_of_arrays", []byte(`{"a":[` + strings.TrimSuffix(strings.Repeat("[0,0,0,0,0,0,0,0,0],", over/10+1), ",") + `]}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			alloc := allocatedBy(func() { _, err = api.ParseObject(tc.body) })
			ce, ok := arm.AsCloudError(err)
			if !ok || ce.StatusCode != http.StatusBadRequest || !strings.Contains(ce.Message, "more than") {
				t.Fatalf("got %v, want 400 saying the body holds too many values", err)
			}
			if limit := uint64(1 << 20); alloc > limit {
				t.Fatalf("refusing it allocated %d bytes, more than %d", alloc, limit)
			}
		})
	}
	t.Run("largest_body_the_specification_allows", func(t *testing.T) {
		var b strings.Builder
		b.WriteString(`{"properties":{"imageDigestMirrors":[`)
		for i := range 240 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"source":"s%d","mirrors":[`+strings.TrimSuffix(strings.Repeat(`"m",`, 255), ",")+`]}`, i)
		}
		b.WriteString(`]}}`)
		if _, err := api.ParseObject([]byte(b.String())); err != nil {
			t.Fatalf("refused: %v", err)
		}
	})
}

// TestSpecExamplesFitTheLimits: every request body among the specification's examples, of
// every api-version, nests and counts far within api.MaxDepth and api.MaxValues, which the
// limits' comments rely on (the deepest nests 7 levels).
func TestSpecExamplesFitTheLimits(t *testing.T) {
	depth := func(v any) int {
		var walk func(v any) int
		walk = func(v any) int {
			d := 0
			switch x := v.(type) {
			case map[string]any:
				for _, e := range x {
					d = max(d, walk(e))
				}
				return d + 1
			case []any:
				for _, e := range x {
					d = max(d, walk(e))
				}
				return d + 1
			}
			return 0
		}
		return walk(v)
	}
	deepest, where := 0, ""
	for _, version := range armspec.Versions() {
		examples, err := armspec.Examples(version, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range examples {
			for name, raw := range x.Parameters {
				if len(raw) == 0 || (raw[0] != '{' && raw[0] != '[') {
					continue
				}
				if _, err := api.ParseObject(raw); err != nil && raw[0] == '{' {
					t.Errorf("%s %s parameter %s: %v", version, x.File, name, err)
				}
				var v any
				if err := json.Unmarshal(raw, &v); err != nil {
					t.Fatal(err)
				}
				if d := depth(v); d > deepest {
					deepest, where = d, version+" "+x.File+" "+name
				}
			}
		}
	}
	t.Logf("deepest request body: %d levels (%s)", deepest, where)
	if deepest*4 > api.MaxDepth {
		t.Fatalf("a request example nests %d levels (%s): MaxDepth %d leaves less than four times that", deepest, where, api.MaxDepth)
	}
}
