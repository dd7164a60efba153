package armgen

import (
	"fmt"
	"slices"
	"strings"
)

// UpdateRoots map a resource to its PATCH definition and the Go name of the generated list of
// what a PATCH body of it may hold.
var UpdateRoots = []struct{ Def, Var string }{
	{"HcpOpenShiftClusterUpdate", "specClusterUpdatePaths"},
	{"NodePoolUpdate", "specNodePoolUpdatePaths"},
}

// updatePaths lists the JSON paths a PATCH body may hold, from the specification's update
// definition (x-ms-mutability "update" is what TypeSpec turned into these definitions). A path
// names a whole object when its update definition allows all of it, and goes deeper when it
// allows only part of it (KmsKeyUpdate: only activeKey.version).
func (p *Package) updatePaths(def string) ([]string, error) {
	d, err := p.specs.resolve(p.file, "#/definitions/"+def)
	if err != nil {
		return nil, err
	}
	var out []string
	if err := p.updateWalk(d, "", &out, 0); err != nil {
		return nil, fmt.Errorf("%s: %w", def, err)
	}
	slices.Sort(out)
	return out, nil
}

func (p *Package) updateWalk(d *Def, at string, out *[]string, depth int) error {
	if depth > 16 {
		return fmt.Errorf("update definitions nest deeper than 16 at %s", at)
	}
	keys, schemas, files, _, err := p.props(d)
	if err != nil {
		return err
	}
	for _, k := range keys {
		s := schemas[k]
		if s.bool("readOnly") {
			continue
		}
		path := at + k
		ref := s.str("$ref")
		if ref == "" {
			*out = append(*out, path)
			continue
		}
		upd, err := p.specs.resolve(files[k], ref)
		if err != nil {
			return err
		}
		whole, err := p.allowsWhole(upd)
		if err != nil {
			return err
		}
		if whole || !isObject(upd.Schema) {
			*out = append(*out, path)
			continue
		}
		if err := p.updateWalk(upd, path+".", out, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// allowsWhole reports whether an update definition X...Update allows every writable leaf of
// X (or has no X to compare with, as the common types' identity update).
func (p *Package) allowsWhole(upd *Def) (bool, error) {
	base, ok := strings.CutSuffix(upd.Name, "Update")
	if !ok {
		return true, nil
	}
	bd, err := p.specs.resolve(upd.File, "#/definitions/"+base)
	if err != nil {
		return true, nil // no base definition to compare with
	}
	a, err := p.leaves(upd, "", 0)
	if err != nil {
		return false, err
	}
	b, err := p.leaves(bd, "", 0)
	if err != nil {
		return false, err
	}
	return slices.Equal(a, b), nil
}

// leaves are a definition's writable leaf paths, sorted.
func (p *Package) leaves(d *Def, at string, depth int) ([]string, error) {
	if depth > 16 {
		return nil, fmt.Errorf("definitions nest deeper than 16 at %s", at)
	}
	keys, schemas, files, _, err := p.props(d)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range keys {
		s := schemas[k]
		if s.bool("readOnly") {
			continue
		}
		if ref := s.str("$ref"); ref != "" {
			sub, err := p.specs.resolve(files[k], ref)
			if err != nil {
				return nil, err
			}
			if isObject(sub.Schema) {
				l, err := p.leaves(sub, at+k+".", depth+1)
				if err != nil {
					return nil, err
				}
				out = append(out, l...)
				continue
			}
		}
		out = append(out, at+k)
	}
	slices.Sort(out)
	return out, nil
}

// UpdatableRoots map a resource to the Go name of the generated list of the paths a write may
// change after creation (x-ms-mutability).
var UpdatableRoots = []struct{ Def, Var string }{
	{"HcpOpenShiftCluster", "specClusterUpdatable"},
}

// modelProperties are the resource's properties the internal model stores (the envelope, tags
// and location, is ARM's: a write changes it through the resource document, not the model).
var modelProperties = []string{"identity", "properties"}

// updatablePaths lists the JSON paths of def that a write may change after creation: a writable
// property is updatable when its x-ms-mutability has "update", or, without one, when its
// parent's is (ARM's rule: mutability is inherited). A path names a whole object when every
// writable leaf in it is updatable and its properties inherit that from it; where they each say
// their own (VersionProfile's id and channelGroup), the paths name them, as the specification
// does: Cluster Service's ClusterUpdate has a field per such property. Unlike the PATCH definition (updatePaths), this says what a
// PUT to an existing resource may change too (properties.api.authorizedCidrs, which
// HcpOpenShiftClusterUpdate lacks).
func (p *Package) updatablePaths(def string) ([]string, error) {
	d, err := p.specs.resolve(p.file, "#/definitions/"+def)
	if err != nil {
		return nil, err
	}
	keys, schemas, files, _, err := p.props(d)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range keys {
		if !slices.Contains(modelProperties, k) {
			continue
		}
		if _, err := p.updatableWalk(schemas[k], files[k], k, true, &out, 0); err != nil {
			return nil, fmt.Errorf("%s: %w", def, err)
		}
	}
	slices.Sort(out)
	return out, nil
}

// updatableWalk adds to out the updatable paths at and under the property s at path, whose
// parent is updatable or not, and reports whether every writable leaf there is updatable (then
// the caller may name the whole object).
func (p *Package) updatableWalk(s *Obj, file, path string, parent bool, out *[]string, depth int) (bool, error) {
	if depth > 16 {
		return false, fmt.Errorf("definitions nest deeper than 16 at %s", path)
	}
	updatable := parent
	if m := s.strings("x-ms-mutability"); m != nil {
		updatable = slices.Contains(m, "update")
	}
	ref := s.str("$ref")
	if ref == "" {
		if updatable {
			*out = append(*out, path)
		}
		return updatable, nil
	}
	d, err := p.specs.resolve(file, ref)
	if err != nil {
		return false, err
	}
	if !isObject(d.Schema) {
		if updatable {
			*out = append(*out, path)
		}
		return updatable, nil
	}
	keys, schemas, files, _, err := p.props(d)
	if err != nil {
		return false, err
	}
	var under []string
	all, declared := true, false
	for _, k := range keys {
		if schemas[k].bool("readOnly") {
			continue
		}
		declared = declared || schemas[k].strings("x-ms-mutability") != nil
		whole, err := p.updatableWalk(schemas[k], files[k], path+"."+k, updatable, &under, depth+1)
		if err != nil {
			return false, err
		}
		all = all && whole
	}
	if all && len(under) > 0 && !declared {
		*out = append(*out, path)
		return true, nil
	}
	*out = append(*out, under...)
	return all, nil
}
