// Package opkind registers every kind of async ARM operation once: the resource its operations
// act on, or the cluster action that starts it. The frontend starts an operation and the backend
// follows it by its kind here; each keeps only its own per-kind logic, in a table keyed by Kind
// that a test on each side checks against All (docs/backend.md, "Adding an operation kind").
package opkind

import (
	"strings"

	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// Kind names an operation kind.
type Kind string

const (
	Cluster           Kind = "cluster"
	NodePool          Kind = "nodePool"
	ExternalAuth      Kind = "externalAuth"
	RequestCredential Kind = "requestAdminCredential"
	RevokeCredentials Kind = "revokeCredentials"
)

// ClusterType is the ARM type of a cluster, the resource every kind acts on or below.
const ClusterType = "Microsoft.RedHatOpenShift/hcpOpenShiftClusters"

// Registration is what both services know of a kind.
type Registration struct {
	Kind Kind
	// What names the kind's Cluster Service object in errors and logs ("node pool").
	What string
	// ChildType is, for a resource directly below a cluster, its ARM type segment ("nodePools").
	// Such a resource goes with its cluster: the backend's cascade of a deleted subscription
	// leaves it to the cluster's delete.
	ChildType string
	// Request is, for an action, the operation request the frontend records
	// (internal/armdoc/actions.go); a resource's operations are Create, Update and Delete.
	Request armdoc.OperationRequest
	// Action is, for an action, its POST segment after the cluster's ID (any casing on the wire).
	Action string
}

// IsAction reports whether the kind is a cluster action rather than a resource.
func (r Registration) IsAction() bool { return r.Request != "" }

// All returns the registrations, one per kind. Adding a kind starts here.
func All() []Registration {
	return []Registration{
		{Kind: Cluster, What: "cluster"},
		{Kind: NodePool, What: "node pool", ChildType: "nodePools"},
		{Kind: ExternalAuth, What: "external auth", ChildType: "externalAuths"},
		{Kind: RequestCredential, What: "credential", Request: armdoc.OperationRequestCredential, Action: "requestAdminCredential"},
		{Kind: RevokeCredentials, What: "revocation", Request: armdoc.OperationRevokeCredentials, Action: "revokeCredentials"},
	}
}

// Lookup returns the registration of k.
func Lookup(k Kind) (Registration, bool) {
	for _, r := range All() {
		if r.Kind == k {
			return r, true
		}
	}
	return Registration{}, false
}

// Actions returns the registrations of the cluster actions.
func Actions() []Registration {
	var out []Registration
	for _, r := range All() {
		if r.IsAction() {
			out = append(out, r)
		}
	}
	return out
}

// IsAction reports whether req is the request of an action rather than a write of a resource.
func IsAction(req armdoc.OperationRequest) bool {
	_, ok := ofRequest(req)
	return ok
}

func ofRequest(req armdoc.OperationRequest) (Registration, bool) {
	for _, r := range Actions() {
		if r.Request == req {
			return r, true
		}
	}
	return Registration{}, false
}

// OfResource returns the kind of the resource an ARM resource ID (any casing) names: a cluster or
// a registered child of one. Anything else has no kind.
func OfResource(rid string) (Registration, bool) {
	id, err := arm.ParseResourceID(rid)
	if err != nil || len(id.Types) == 0 || !strings.EqualFold(id.Provider+"/"+id.Types[0], ClusterType) {
		return Registration{}, false
	}
	switch len(id.Types) {
	case 1:
		return Lookup(Cluster)
	case 2:
		for _, r := range All() {
			if r.ChildType != "" && strings.EqualFold(id.Types[1], r.ChildType) {
				return r, true
			}
		}
	}
	return Registration{}, false
}

// Of returns the kind of an operation: an action's by its request, a resource's by the resource
// it acts on.
func Of(op *armdoc.OperationDocument) (Registration, bool) {
	if r, ok := ofRequest(op.Request); ok {
		return r, true
	}
	return OfResource(op.ExternalID)
}
