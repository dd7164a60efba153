package regionconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repoConfigDir finds config/ from this package's directory.
func repoConfigDir(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return filepath.Join(dir, "config")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.work above the test's directory")
		}
		dir = parent
	}
}

// TestRenderedConfigIsCurrent re-renders every shipped region and fails when a committed
// output under config/rendered is stale. UPDATE=1 rewrites them.
func TestRenderedConfigIsCurrent(t *testing.T) {
	dir := repoConfigDir(t)
	regions, err := RenderFiles(filepath.Join(dir, "config.yaml"), filepath.Join(dir, "config.schema.json"))
	if err != nil {
		t.Fatalf("render shipped config: %v", err)
	}
	names := map[string]bool{}
	for _, r := range regions {
		names[r.Name()] = true
	}
	for _, want := range []string{"dev-local", "prod-westus3"} {
		if !names[want] {
			t.Errorf("shipped config renders no region %s; have %v", want, names)
		}
	}
	files, err := RenderDir(dir)
	if err != nil {
		t.Fatalf("render shipped config and values: %v", err)
	}
	out := filepath.Join(dir, "rendered")
	if os.Getenv("UPDATE") != "" {
		if err := Write(out, files); err != nil {
			t.Fatal(err)
		}
	}
	stale, err := Stale(out, files)
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) > 0 {
		t.Errorf("config/rendered is stale (run make render-config or UPDATE=1 go test):\n  %s", strings.Join(stale, "\n  "))
	}
}

// tinyFile is a one-cloud, one-region config whose layers each set "owner" and a nested
// value, so the merge order is visible.
func tinyFile() File {
	return File{
		Defaults: map[string]any{"owner": "defaults", "nested": map[string]any{"a": "defaults", "b": "defaults"}, "list": []any{"x", "y"}},
		Clouds: map[string]Cloud{"c": {
			Defaults: map[string]any{"owner": "cloud", "nested": map[string]any{"a": "cloud"}},
			Environments: map[string]Environment{"e": {
				Defaults: map[string]any{"owner": "environment", "list": []any{"z"}},
				Regions: map[string]*Region{"r": {
					Values: map[string]any{"owner": "region", "managementCluster": map[string]any{"capacity": 10.0, "agent": map[string]any{"replicas": 1.0, "cpu": "50m"}}},
					Stamps: map[string]map[string]any{
						"m1": {},
						"m2": {"capacity": 3.0, "agent": map[string]any{"replicas": 2.0}},
					},
				}},
			}},
		}},
	}
}

func TestMergeOrderAndStamps(t *testing.T) {
	open, err := ParseSchema([]byte(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	regions, err := RenderAll(tinyFile(), open)
	if err != nil {
		t.Fatal(err)
	}
	if len(regions) != 1 || regions[0].Name() != "e-r" {
		t.Fatalf("want one region e-r, got %+v", regions)
	}
	v := regions[0].Values
	tests := []struct {
		name string
		path []string
		want any
	}{
		{"later_layer_wins_for_scalars", []string{"owner"}, "region"},
		{"maps_merge_key_by_key_later_wins", []string{"nested", "a"}, "cloud"},
		{"maps_keep_keys_no_later_layer_sets", []string{"nested", "b"}, "defaults"},
		{"lists_are_replaced_not_appended", []string{"list"}, []any{"z"}},
		{"renderer_sets_identity_from_layer_path", []string{"cloud"}, "c"},
		{"renderer_sets_environment", []string{"environment"}, "e"},
		{"renderer_sets_region", []string{"region"}, "r"},
		{"stamp_without_overrides_gets_merged_values", []string{"managementClusters", "m1", "capacity"}, 10.0},
		{"stamp_override_wins", []string{"managementClusters", "m2", "capacity"}, 3.0},
		{"stamp_override_merges_into_nested_map", []string{"managementClusters", "m2", "agent", "replicas"}, 2.0},
		{"stamp_keeps_unoverridden_nested_keys", []string{"managementClusters", "m2", "agent", "cpu"}, "50m"},
		{"one_stamp_does_not_leak_into_another", []string{"managementClusters", "m1", "agent", "replicas"}, 1.0},
		{"template_key_is_not_in_the_output", []string{"managementCluster"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := lookup(v, tc.path)
			if !equalJSON(got, tc.want) {
				t.Errorf("%s = %#v, want %#v", strings.Join(tc.path, "."), got, tc.want)
			}
		})
	}
}

func lookup(v any, path []string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func equalJSON(a, b any) bool {
	la, aok := a.([]any)
	lb, bok := b.([]any)
	if aok || bok {
		if !aok || !bok || len(la) != len(lb) {
			return false
		}
		for i := range la {
			if la[i] != lb[i] {
				return false
			}
		}
		return true
	}
	return a == b
}

// TestSchemaErrorsNameKeyAndLayer breaks the shipped config one way at a time and checks that
// the error names the key's dotted path, the schema rule it breaks (its keyword and what it
// wants), and the layer to fix.
func TestSchemaErrorsNameKeyAndLayer(t *testing.T) {
	dir := repoConfigDir(t)
	schema, err := LoadSchema(filepath.Join(dir, "config.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	const prodRegion = "clouds.public.environments.prod.regions.westus3"
	tests := []struct {
		name   string
		break_ func(f *File)
		want   []string
		region string // the failing region; default public/prod/westus3
	}{
		{
			name: "unknown_key_in_region_layer",
			break_: func(f *File) {
				region(f, "public", "prod", "westus3").Values["frontend"] = map[string]any{"replicaz": 3.0}
			},
			want: []string{"frontend.replicaz: additionalProperties: unknown key (set by " + prodRegion + ".values)"},
		},
		{
			name: "unknown_key_in_a_stamp",
			break_: func(f *File) {
				region(f, "public", "prod", "westus3").Stamps["mgmt-2"]["maestroAgent"] = map[string]any{"replica": 2.0}
			},
			want: []string{"managementClusters.mgmt-2.maestroAgent.replica: additionalProperties: unknown key (set by " + prodRegion + ".stamps.mgmt-2)"},
		},
		{
			name: "wrong_type_in_environment_layer",
			break_: func(f *File) {
				f.Clouds["public"].Environments["prod"].Defaults["clusterService"] = map[string]any{"replicas": "three"}
			},
			want: []string{"clusterService.replicas: type: got string, want integer (set by clouds.public.environments.prod.defaults)"},
		},
		{
			name:   "wrong_type_in_stamp_override",
			break_: func(f *File) { region(f, "public", "prod", "westus3").Stamps["mgmt-3"]["capacity"] = "50" },
			want:   []string{"managementClusters.mgmt-3.capacity: type: got string, want integer (set by " + prodRegion + ".stamps.mgmt-3)"},
		},
		{
			name:   "fraction_where_an_integer_is_wanted",
			break_: func(f *File) { region(f, "public", "prod", "westus3").Stamps["mgmt-3"]["capacity"] = 2.5 },
			want:   []string{"managementClusters.mgmt-3.capacity: type: got number, want integer"},
		},
		{
			name:   "below_minimum_in_defaults_reaches_every_stamp",
			break_: func(f *File) { f.Defaults["managementCluster"].(map[string]any)["capacity"] = 0.0 },
			// prod sets its own capacity in its environment layer, so only dev inherits the 0.
			want: []string{
				"managementClusters.mgmt-1.capacity: minimum: got 0, want 1 (set by defaults)",
				"managementClusters.mgmt-2.capacity: minimum: got 0, want 1 (set by defaults)",
			},
			region: "dev/dev/local",
		},
		{
			name: "above_maximum_port",
			break_: func(f *File) {
				region(f, "public", "prod", "westus3").Values["database"].(map[string]any)["port"] = 70000.0
			},
			want: []string{"database.port: maximum: got 70000, want 65535 (set by " + prodRegion + ".values)"},
		},
		{
			name:   "enum_violation_in_cloud_layer",
			break_: func(f *File) { f.Clouds["public"].Defaults["database"] = map[string]any{"sslMode": "prefer"} },
			want:   []string{"database.sslMode: enum: value must be one of 'disable', 'require', 'verify-full' (set by clouds.public.defaults)"},
		},
		{
			name:   "pattern_violation",
			break_: func(f *File) { region(f, "public", "prod", "westus3").Values["location"] = "West US 3" },
			want:   []string{"location: pattern: 'West US 3' does not match pattern '^[a-z0-9]+$' (set by " + prodRegion + ".values)"},
		},
		{
			name:   "missing_required_key",
			break_: func(f *File) { delete(region(f, "public", "prod", "westus3").Values, "location") },
			want:   []string{"location: required: key is missing (not set by any layer)"},
		},
		{
			name:   "region_without_stamps",
			break_: func(f *File) { region(f, "public", "prod", "westus3").Stamps = nil },
			want:   []string{"managementClusters: minProperties: got 0, want 1"},
		},
		{
			name: "secret_reference_in_two_forms_at_once",
			break_: func(f *File) {
				tls := f.Clouds["dev"].Environments["dev"].Defaults["tls"].(map[string]any)
				tls["ca"] = map[string]any{"localPKI": "ca", "file": "/etc/ca.crt"}
			},
			want:   []string{"tls.ca: oneOf: matches forms 1 and 3, want exactly one (set by clouds.dev.environments.dev.defaults)"},
			region: "dev/dev/local",
		},
		{
			name: "secret_reference_in_no_complete_form",
			break_: func(f *File) {
				f.Clouds["public"].Defaults["tls"].(map[string]any)["ca"] = map[string]any{"keyVault": "openhcp-svc-kv"}
			},
			want: []string{"tls.ca: oneOf: matches none of its 3 forms (set by clouds.public.defaults)"},
		},
		{
			// Hosted kube-apiservers run (hostedAPIServers > 0) but the pod network is not
			// known: the NetworkPolicy would admit every pod of the cluster as outside.
			name: "hosted_apiservers_without_the_pod_network",
			break_: func(f *File) {
				sim := f.Clouds["public"].Defaults["managementCluster"].(map[string]any)["hypershiftSim"].(map[string]any)
				sim["podCIDRs"] = []any{}
			},
			want: []string{"managementClusters.mgmt-1.hypershiftSim.podCIDRs: minItems: got 0, want 1 (set by clouds.public.defaults)"},
		},
		{
			name:   "layer_may_not_set_renderer_keys",
			break_: func(f *File) { f.Clouds["public"].Defaults["region"] = "eastus" },
			want:   []string{`clouds.public.defaults: key "region" is set by the renderer`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := LoadFile(filepath.Join(dir, "config.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			tc.break_(&f)
			_, err = RenderAll(f, schema)
			if err == nil {
				t.Fatal("broken config rendered without error")
			}
			t.Log(err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
			if tc.region == "" {
				tc.region = "public/prod/westus3"
			}
			if !strings.Contains(err.Error(), "region "+tc.region+":") {
				t.Errorf("error does not name the region:\n%v", err)
			}
		})
	}
}

func region(f *File, cloud, env, name string) *Region {
	return f.Clouds[cloud].Environments[env].Regions[name]
}

// TestParseSchemaRefusesBadSchemas: a schema the validator would not apply as written fails to
// load, instead of passing every config.
func TestParseSchemaRefusesBadSchemas(t *testing.T) {
	tests := []struct {
		name, schema, want string
	}{
		{"misspelt_keyword_at_root", `{"type":"object","requird":["a"]}`, `keyword "requird" at (root)`},
		{"misspelt_keyword_in_property", `{"properties":{"a":{"type":"integer","minimun":1}}}`, `keyword "minimun" at properties.a`},
		{"misspelt_keyword_under_defs", `{"$defs":{"port":{"maximun":65535}}}`, `keyword "maximun" at $defs.port`},
		{"unknown_type", `{"type":"null-ish"}`, "compile schema"},
		{"bad_pattern", `{"properties":{"a":{"pattern":"("}}}`, "compile schema"},
		{"dangling_ref", `{"properties":{"a":{"$ref":"#/$defs/nothing"}}}`, "compile schema"},
		{"not_json", `{"type":`, "parse schema"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSchema([]byte(tc.schema))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseSchema error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestParseSchemaAcceptsDraft202012 loads the keywords the hand-written validator refused:
// references, oneOf, format, items.
func TestParseSchemaAcceptsDraft202012(t *testing.T) {
	s, err := ParseSchema([]byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
		"properties":{"a":{"$ref":"#/$defs/port"},"u":{"type":"string","format":"uri"},"l":{"type":"array","items":{"type":"string"}},
		"o":{"oneOf":[{"required":["x"]},{"required":["y"]}]}},
		"$defs":{"port":{"type":"integer","minimum":1}}}`))
	if err != nil {
		t.Fatalf("ParseSchema: %v", err)
	}
	noLayer := func([]string) string { return "" }
	for _, tc := range []struct {
		name  string
		value map[string]any
		want  string // "" when valid
	}{
		{"valid", map[string]any{"a": 1.0, "u": "https://x", "l": []any{"s"}, "o": map[string]any{"x": 1.0}}, ""},
		{"ref_applies_its_definition", map[string]any{"a": 0.0}, "a: minimum: got 0, want 1"},
		{"format_is_asserted", map[string]any{"u": "not a uri"}, "u: format: "},
		{"items_apply_to_each_element", map[string]any{"l": []any{"s", 2.0}}, "l.1: type: got number, want string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Validate(tc.value, noLayer)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestNoPodNetworkNeededWithoutHostedAPIServers: the pod network is required only where hosted
// kube-apiservers run (the NetworkPolicy that admits their ports needs it).
func TestNoPodNetworkNeededWithoutHostedAPIServers(t *testing.T) {
	dir := repoConfigDir(t)
	schema, err := LoadSchema(filepath.Join(dir, "config.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := LoadFile(filepath.Join(dir, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sim := f.Clouds["public"].Defaults["managementCluster"].(map[string]any)["hypershiftSim"].(map[string]any)
	sim["podCIDRs"] = []any{}
	sim["hostedAPIServers"] = 0.0
	if _, err := RenderAll(f, schema); err != nil {
		t.Fatalf("a region without hosted kube-apiservers needs no pod network: %v", err)
	}
}
