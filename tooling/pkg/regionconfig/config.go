// Package regionconfig owns OpenHCP's layered region configuration (config/config.yaml): it
// merges the layers defaults → cloud → environment → region, expands the per-management-cluster
// stamps, validates the result against config/config.schema.json and renders one resolved
// configuration per region. docs/deploy.md describes the format.
package regionconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// File is the layer structure of config.yaml. Values are free-form maps here; their shape is
// the schema's business, checked after merging.
type File struct {
	Defaults map[string]any   `json:"defaults"`
	Clouds   map[string]Cloud `json:"clouds"`
}

// Cloud is one cloud's layer and its environments.
type Cloud struct {
	Defaults     map[string]any         `json:"defaults"`
	Environments map[string]Environment `json:"environments"`
}

// Environment is one environment's layer and its regions.
type Environment struct {
	Defaults map[string]any     `json:"defaults"`
	Regions  map[string]*Region `json:"regions"`
}

// Region is the region layer and its stamps (management clusters), each with optional overrides
// of the merged managementCluster values.
type Region struct {
	Values map[string]any            `json:"values"`
	Stamps map[string]map[string]any `json:"stamps"`
}

// Rendered is one region's resolved configuration.
type Rendered struct {
	Cloud, Environment, Region string
	// Values is the merged, stamp-expanded configuration that passed the schema.
	Values map[string]any
}

// Name is the region's file name stem: <environment>-<region>.
func (r Rendered) Name() string { return r.Environment + "-" + r.Region }

// JSON is the committed form of the resolved configuration: indented, keys sorted, newline-terminated.
func (r Rendered) JSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r.Values); err != nil {
		return nil, fmt.Errorf("encode %s: %w", r.Name(), err)
	}
	return b.Bytes(), nil
}

// Keys the renderer sets from the layer path; a layer that sets them is rejected so the file
// cannot disagree with where a value sits.
const (
	keyCloud              = "cloud"
	keyEnvironment        = "environment"
	keyRegion             = "region"
	keyManagementCluster  = "managementCluster"
	keyManagementClusters = "managementClusters"
)

// LoadFile reads config.yaml, rejecting unknown layer-structure keys.
func LoadFile(path string) (File, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return File{}, fmt.Errorf("read config: %w", err)
	}
	return ParseFile(raw)
}

// ParseFile parses config.yaml's text, rejecting unknown layer-structure keys.
func ParseFile(raw []byte) (File, error) {
	var f File
	if err := yaml.UnmarshalStrict(raw, &f); err != nil {
		return File{}, fmt.Errorf("parse config layers: %w", err)
	}
	return f, nil
}

// RenderAll merges, expands and validates every region in f, in a stable order (cloud,
// environment, region). It reports every failing region, not just the first.
func RenderAll(f File, s *Schema) ([]Rendered, error) {
	var out []Rendered
	var errs []string
	seen := map[string]string{}
	for _, cn := range sortedKeys(f.Clouds) {
		c := f.Clouds[cn]
		for _, en := range sortedKeys(c.Environments) {
			e := c.Environments[en]
			for _, rn := range sortedKeys(e.Regions) {
				r, err := renderRegion(f, cn, en, rn, s)
				if err != nil {
					errs = append(errs, err.Error())
					continue
				}
				if other, dup := seen[r.Name()]; dup {
					errs = append(errs, fmt.Sprintf("region %s/%s/%s renders to %s.json, as does %s", cn, en, rn, r.Name(), other))
					continue
				}
				seen[r.Name()] = cn + "/" + en + "/" + rn
				out = append(out, r)
			}
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("config invalid:\n  %s", strings.Join(errs, "\n  "))
	}
	return out, nil
}

func renderRegion(f File, cn, en, rn string, s *Schema) (Rendered, error) {
	c := f.Clouds[cn]
	e := c.Environments[en]
	r := e.Regions[rn]
	if r == nil {
		r = &Region{}
	}
	where := fmt.Sprintf("region %s/%s/%s", cn, en, rn)
	layers := []struct {
		name   string
		values map[string]any
	}{
		{"defaults", f.Defaults},
		{fmt.Sprintf("clouds.%s.defaults", cn), c.Defaults},
		{fmt.Sprintf("clouds.%s.environments.%s.defaults", cn, en), e.Defaults},
		{fmt.Sprintf("clouds.%s.environments.%s.regions.%s.values", cn, en, rn), r.Values},
	}
	m := newMerged()
	for _, l := range layers {
		for _, k := range []string{keyCloud, keyEnvironment, keyRegion, keyManagementClusters} {
			if _, ok := l.values[k]; ok {
				return Rendered{}, fmt.Errorf("%s: %s: key %q is set by the renderer (from the layer path or the stamps), not by a layer", where, l.name, k)
			}
		}
		m.apply(l.values, l.name)
	}
	m.apply(map[string]any{keyCloud: cn, keyEnvironment: en, keyRegion: rn}, "renderer")

	// Expand stamps: every management cluster starts from the merged managementCluster values
	// (keeping which layer set each of them) and takes its own stamp's overrides on top.
	base := m.extract(keyManagementCluster)
	stampsLayer := fmt.Sprintf("clouds.%s.environments.%s.regions.%s.stamps", cn, en, rn)
	clusters := newMerged()
	for _, sn := range sortedKeys(r.Stamps) {
		one := base.clone()
		one.apply(r.Stamps[sn], stampsLayer+"."+sn)
		clusters.graft(sn, one, stampsLayer+"."+sn)
	}
	m.graft(keyManagementClusters, clusters, stampsLayer)

	if err := s.Validate(m.values, m.layerOf); err != nil {
		return Rendered{}, fmt.Errorf("%s: %w", where, err)
	}
	return Rendered{Cloud: cn, Environment: en, Region: rn, Values: m.values}, nil
}

// sortedKeys gives map keys in a stable order, so outputs and error lists are deterministic.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// RenderFiles loads config.yaml and its schema and renders every region.
func RenderFiles(configPath, schemaPath string) ([]Rendered, error) {
	s, err := LoadSchema(schemaPath)
	if err != nil {
		return nil, err
	}
	f, err := LoadFile(configPath)
	if err != nil {
		return nil, err
	}
	return RenderAll(f, s)
}
