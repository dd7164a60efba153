// Package rolesets is the catalogue behind ARM's hcpOperatorIdentityRoleSets: for each OpenShift
// minor version, the operators that run under a customer's user-assigned managed identities and
// the Azure role definitions each of those identities needs. It is configuration (a JSON file),
// validated when it is loaded so a bad file stops start-up.
package rolesets

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

//go:embed default.json
var defaultJSON []byte

// RoleDefinition is one Azure role definition an operator's identity needs.
type RoleDefinition struct {
	Name       string `json:"name"`
	ResourceID string `json:"resourceId"`
}

// Operator is one operator identity: Required is "Always" or "OnEnablement" (needed only when
// a feature using the operator is enabled), as the ARM specification's enum says.
type Operator struct {
	Name            string           `json:"name"`
	Required        string           `json:"required"`
	RoleDefinitions []RoleDefinition `json:"roleDefinitions"`
}

// RoleSet is what one OpenShift minor version needs.
type RoleSet struct {
	// Version is the minor version, e.g. "4.19"; it is the ARM resource's name.
	Version               string
	ControlPlaneOperators []Operator
	DataPlaneOperators    []Operator
}

// Catalogue holds the role sets by minor version.
type Catalogue struct {
	sets map[string]RoleSet
}

// fileFormat is the JSON file: one entry may serve several minors that need the same roles.
type fileFormat struct {
	RoleSets []struct {
		Versions              []string   `json:"versions"`
		ControlPlaneOperators []Operator `json:"controlPlaneOperators"`
		DataPlaneOperators    []Operator `json:"dataPlaneOperators"`
	} `json:"roleSets"`
}

var (
	minorRE = regexp.MustCompile(`^[0-9]+\.[0-9]+$`)
	// roleDefinitionRE: a tenant-scoped role definition ID, as the spec's
	// RoleDefinitionResourceId (arm-id of Microsoft.Authorization/roleDefinitions at Tenant scope).
	roleDefinitionRE = regexp.MustCompile(`^/providers/Microsoft\.Authorization/roleDefinitions/[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
)

// Default is the catalogue shipped with the frontend (default.json).
func Default() (*Catalogue, error) { return Parse(defaultJSON) }

// Load reads a catalogue file.
func Load(path string) (*Catalogue, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read operator identity role sets: %w", err)
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse decodes and validates a catalogue; unknown fields, a version listed twice, a bad
// version, operator or role definition are errors that say where.
func Parse(b []byte) (*Catalogue, error) {
	var f fileFormat
	// "_comment" may document the file; anything else unknown is a mistake.
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("operator identity role sets: %w", err)
	}
	for k := range raw {
		if k != "roleSets" && k != "_comment" {
			return nil, fmt.Errorf("operator identity role sets: unknown key %q", k)
		}
	}
	delete(raw, "_comment")
	clean, _ := json.Marshal(raw)
	dec := json.NewDecoder(strings.NewReader(string(clean)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("operator identity role sets: %w", err)
	}
	c := &Catalogue{sets: map[string]RoleSet{}}
	for i, e := range f.RoleSets {
		where := fmt.Sprintf("roleSets[%d]", i)
		if len(e.Versions) == 0 {
			return nil, fmt.Errorf("%s: versions is empty", where)
		}
		if err := checkOperators(where+".controlPlaneOperators", e.ControlPlaneOperators); err != nil {
			return nil, err
		}
		if err := checkOperators(where+".dataPlaneOperators", e.DataPlaneOperators); err != nil {
			return nil, err
		}
		for _, v := range e.Versions {
			if !minorRE.MatchString(v) {
				return nil, fmt.Errorf("%s: version %q is not a minor version such as 4.19", where, v)
			}
			if _, dup := c.sets[v]; dup {
				return nil, fmt.Errorf("%s: version %s is listed twice", where, v)
			}
			c.sets[v] = RoleSet{Version: v, ControlPlaneOperators: e.ControlPlaneOperators, DataPlaneOperators: e.DataPlaneOperators}
		}
	}
	return c, nil
}

func checkOperators(where string, ops []Operator) error {
	seen := map[string]bool{}
	for i, op := range ops {
		at := fmt.Sprintf("%s[%d]", where, i)
		switch {
		case op.Name == "":
			return fmt.Errorf("%s: name is empty", at)
		case seen[op.Name]:
			return fmt.Errorf("%s: operator %s is listed twice", at, op.Name)
		case op.Required != "Always" && op.Required != "OnEnablement":
			return fmt.Errorf("%s: required is %q, not Always or OnEnablement", at, op.Required)
		case len(op.RoleDefinitions) == 0:
			return fmt.Errorf("%s: operator %s has no roleDefinitions", at, op.Name)
		}
		seen[op.Name] = true
		for j, rd := range op.RoleDefinitions {
			if rd.Name == "" || !roleDefinitionRE.MatchString(rd.ResourceID) {
				return fmt.Errorf("%s.roleDefinitions[%d]: needs a name and a resourceId /providers/Microsoft.Authorization/roleDefinitions/<guid>, got %q %q", at, j, rd.Name, rd.ResourceID)
			}
		}
	}
	return nil
}

// Get finds the role set of a minor version; names are compared case-insensitively like every
// ARM name (versions have no letters, so this only matters for junk).
func (c *Catalogue) Get(version string) (RoleSet, bool) {
	rs, ok := c.sets[strings.ToLower(version)]
	return rs, ok
}

// Newest is the role set of the newest minor in the catalogue; false when it is empty.
func (c *Catalogue) Newest() (RoleSet, bool) {
	all := c.List()
	if len(all) == 0 {
		return RoleSet{}, false
	}
	return all[len(all)-1], true
}

// Names are the operators' names, in the catalogue's order.
func Names(ops []Operator) []string {
	out := make([]string, len(ops))
	for i, op := range ops {
		out[i] = op.Name
	}
	return out
}

// List returns every role set, oldest minor first.
func (c *Catalogue) List() []RoleSet {
	out := make([]RoleSet, 0, len(c.sets))
	for _, rs := range c.sets {
		out = append(out, rs)
	}
	sort.Slice(out, func(i, j int) bool { return minorLess(out[i].Version, out[j].Version) })
	return out
}

func minorLess(a, b string) bool {
	am, an, _ := strings.Cut(a, ".")
	bm, bn, _ := strings.Cut(b, ".")
	ai, _ := strconv.Atoi(am)
	bi, _ := strconv.Atoi(bm)
	if ai != bi {
		return ai < bi
	}
	ani, _ := strconv.Atoi(an)
	bni, _ := strconv.Atoi(bn)
	return ani < bni
}
