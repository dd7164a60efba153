package regionconfig

import (
	"maps"
	"strings"
)

// merged is a configuration tree being built from layers, with the name of the layer that last
// set every value (prov, keyed by dotted path), so a schema error can say which layer to fix.
type merged struct {
	values map[string]any
	prov   map[string]string
}

func newMerged() *merged { return &merged{values: map[string]any{}, prov: map[string]string{}} }

// apply merges one layer on top: maps are merged key by key, anything else (scalars, lists, a
// map replacing a scalar or the reverse) replaces what was there.
func (m *merged) apply(layer map[string]any, name string) {
	mergeInto(m.values, layer, "", name, m.prov)
}

func mergeInto(dst, src map[string]any, prefix, layer string, prov map[string]string) {
	for k, v := range src {
		p := joinPath(prefix, k)
		sv, srcIsMap := v.(map[string]any)
		dv, dstIsMap := dst[k].(map[string]any)
		if srcIsMap && dstIsMap {
			mergeInto(dv, sv, p, layer, prov)
			continue
		}
		dropUnder(prov, p)
		dst[k] = deepCopy(v)
		record(prov, p, v, layer)
	}
}

// record marks path and everything below it as set by layer.
func record(prov map[string]string, path string, v any, layer string) {
	prov[path] = layer
	if mv, ok := v.(map[string]any); ok {
		for k, c := range mv {
			record(prov, joinPath(path, k), c, layer)
		}
	}
}

func dropUnder(prov map[string]string, path string) {
	for p := range prov {
		if p == path || strings.HasPrefix(p, path+".") {
			delete(prov, p)
		}
	}
}

// extract removes the map at key and returns it as its own tree with its provenance.
func (m *merged) extract(key string) *merged {
	out := newMerged()
	if v, ok := m.values[key].(map[string]any); ok {
		out.values = v
	}
	for p, l := range m.prov {
		if rest, ok := strings.CutPrefix(p, key+"."); ok {
			out.prov[rest] = l
		}
	}
	delete(m.values, key)
	dropUnder(m.prov, key)
	return out
}

// graft places sub's tree at key, recording layer for key itself.
func (m *merged) graft(key string, sub *merged, layer string) {
	m.values[key] = sub.values
	m.prov[key] = layer
	for p, l := range sub.prov {
		m.prov[joinPath(key, p)] = l
	}
}

func (m *merged) clone() *merged {
	return &merged{values: deepCopy(m.values).(map[string]any), prov: maps.Clone(m.prov)}
}

// layerOf names the layer that set path, or the nearest enclosing value that a layer set.
func (m *merged) layerOf(path []string) string {
	for i := len(path); i > 0; i-- {
		if l, ok := m.prov[pathString(path[:i])]; ok {
			return l
		}
	}
	return ""
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, c := range t {
			out[k] = deepCopy(c)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, c := range t {
			out[i] = deepCopy(c)
		}
		return out
	default:
		return v
	}
}

func joinPath(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

func pathString(path []string) string { return strings.Join(path, ".") }
