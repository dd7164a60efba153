package frontend

import (
	"encoding/json"
	"net/http"
)

// providerOperation is an entry of GET /providers/Microsoft.RedHatOpenShift/operations
// (common-types v6 Operation).
type providerOperation struct {
	Name         string                   `json:"name"`
	IsDataAction bool                     `json:"isDataAction"`
	Display      providerOperationDisplay `json:"display"`
	Origin       string                   `json:"origin"`
}

type providerOperationDisplay struct {
	Provider    string `json:"provider"`
	Resource    string `json:"resource"`
	Operation   string `json:"operation"`
	Description string `json:"description"`
}

// providerOperations are the RBAC operations of every path in the specification (the same in
// all four api-versions): read/write/delete on each resource type, the two cluster actions,
// the location-scoped reads, and the provider's own.
var providerOperations = func() []providerOperation {
	const provider = "Microsoft Red Hat OpenShift"
	const ns = "Microsoft.RedHatOpenShift/"
	var ops []providerOperation
	add := func(name, resource, operation, description string) {
		ops = append(ops, providerOperation{Name: ns + name, Origin: "user,system",
			Display: providerOperationDisplay{Provider: provider, Resource: resource, Operation: operation, Description: description}})
	}
	for _, rt := range []struct{ typ, resource, noun string }{
		{"hcpOpenShiftClusters", "HCP OpenShift clusters", "an HCP OpenShift cluster"},
		{"hcpOpenShiftClusters/nodePools", "HCP OpenShift cluster node pools", "a node pool"},
		{"hcpOpenShiftClusters/externalAuths", "HCP OpenShift cluster external authentication", "an external authentication configuration"},
	} {
		add(rt.typ+"/read", rt.resource, "Read "+rt.resource, "Gets or lists "+rt.noun+".")
		add(rt.typ+"/write", rt.resource, "Create or update "+rt.resource, "Creates or updates "+rt.noun+".")
		add(rt.typ+"/delete", rt.resource, "Delete "+rt.resource, "Deletes "+rt.noun+".")
	}
	add("hcpOpenShiftClusters/requestAdminCredential/action", "HCP OpenShift clusters", "Request admin credential",
		"Requests a break-glass kubeconfig for an HCP OpenShift cluster.")
	add("hcpOpenShiftClusters/revokeCredentials/action", "HCP OpenShift clusters", "Revoke credentials",
		"Revokes every break-glass credential issued for an HCP OpenShift cluster.")
	add("locations/hcpOpenShiftVersions/read", "HCP OpenShift versions", "Read HCP OpenShift versions",
		"Lists the OpenShift versions available in a location.")
	add("locations/hcpOperatorIdentityRoleSets/read", "HCP operator identity role sets", "Read HCP operator identity role sets",
		"Lists the roles the operator identities of an HCP OpenShift cluster need.")
	add("locations/hcpOperationStatuses/read", "HCP operation statuses", "Read HCP operation statuses",
		"Gets the status of an asynchronous operation.")
	add("locations/hcpOperationResults/read", "HCP operation results", "Read HCP operation results",
		"Gets the result of an asynchronous operation.")
	add("operations/read", "Operations", "Read operations", "Lists the operations of the Microsoft.RedHatOpenShift resource provider.")
	return ops
}()

// listOperations serves GET /providers/Microsoft.RedHatOpenShift/operations. The list is
// short, so it is one page without nextLink.
func (s *Server) listOperations(w http.ResponseWriter, r *http.Request) error {
	b, err := json.Marshal(struct {
		Value []providerOperation `json:"value"`
	}{providerOperations})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, b)
	return nil
}
