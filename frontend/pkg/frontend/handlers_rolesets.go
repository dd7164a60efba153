package frontend

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/openhcp/openhcp/frontend/pkg/rolesets"
	"github.com/openhcp/openhcp/internal/arm"
)

const roleSetsPath = operationsScope + "/hcpoperatoridentityrolesets"

// roleSetRoutes serves hcpOperatorIdentityRoleSets from the frontend's role-set catalogue
// (Config.RoleSets; frontend/pkg/rolesets).
func (s *Server) roleSetRoutes() {
	s.handle("GET "+roleSetsPath, s.listRoleSets, resourceRoute)
	s.handle("GET "+roleSetsPath+"/{roleSetName}", s.getRoleSet, resourceRoute)
}

type roleSetProperties struct {
	ControlPlaneOperators []rolesets.Operator `json:"controlPlaneOperators"`
	DataPlaneOperators    []rolesets.Operator `json:"dataPlaneOperators"`
}

type roleSetResource struct {
	ID         string            `json:"id"`
	Name       string            `json:"name"`
	Type       string            `json:"type"`
	Properties roleSetProperties `json:"properties"`
}

func (s *Server) roleSetResource(r *http.Request, rs rolesets.RoleSet) roleSetResource {
	id := locationScope(r) + "/hcpOperatorIdentityRoleSets/" + rs.Version
	// The spec requires both arrays: never null.
	cp, dp := rs.ControlPlaneOperators, rs.DataPlaneOperators
	if cp == nil {
		cp = []rolesets.Operator{}
	}
	if dp == nil {
		dp = []rolesets.Operator{}
	}
	return roleSetResource{ID: id, Name: rs.Version, Type: "Microsoft.RedHatOpenShift/hcpOperatorIdentityRoleSets",
		Properties: roleSetProperties{ControlPlaneOperators: cp, DataPlaneOperators: dp}}
}

// listRoleSets answers HcpOperatorIdentityRoleSets_List: every minor version in one page.
func (s *Server) listRoleSets(w http.ResponseWriter, r *http.Request) error {
	if err := s.checkVersionLocation(r); err != nil {
		return err
	}
	out := struct {
		Value []roleSetResource `json:"value"`
	}{Value: []roleSetResource{}}
	for _, rs := range s.cfg.RoleSets.List() {
		out.Value = append(out.Value, s.roleSetResource(r, rs))
	}
	b, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("encode role sets: %w", err)
	}
	writeJSON(w, http.StatusOK, b)
	return nil
}

// getRoleSet answers HcpOperatorIdentityRoleSets_Get; the name is an OpenShift minor version.
func (s *Server) getRoleSet(w http.ResponseWriter, r *http.Request) error {
	if err := s.checkVersionLocation(r); err != nil {
		return err
	}
	name := r.PathValue("roleSetName")
	rs, ok := s.cfg.RoleSets.Get(name)
	if !ok {
		return cloudError(http.StatusNotFound, arm.CodeResourceNotFound, "",
			"There is no operator identity role set for OpenShift version '%s' in location '%s'; role sets are named by minor version, such as 4.19.", name, s.cfg.Location)
	}
	b, err := json.Marshal(s.roleSetResource(r, rs))
	if err != nil {
		return fmt.Errorf("encode role set: %w", err)
	}
	writeJSON(w, http.StatusOK, b)
	return nil
}

// locationScope is /subscriptions/{id}/providers/Microsoft.RedHatOpenShift/locations/{location}
// with the subscription and location as the client spelled them (the routed path is
// lowercased; r.PathValue returns lowercase).
func locationScope(r *http.Request) string {
	seg := strings.Split(info(r).originalPath, "/")
	sub, loc := r.PathValue("subscriptionId"), r.PathValue("location")
	// "", "subscriptions", {id}, "providers", {namespace}, "locations", {location}, …
	if len(seg) > 6 && strings.EqualFold(seg[2], sub) && strings.EqualFold(seg[6], loc) {
		sub, loc = seg[2], seg[6]
	}
	return "/subscriptions/" + sub + "/providers/Microsoft.RedHatOpenShift/locations/" + loc
}
