// Package access decides who calls the admin API and what they may do. An SRE is a client
// certificate from the client CA whose subject common name names the person and whose one
// organisation names their group; Groups is the one table of what each group may do.
package access

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/openhcp/openhcp/internal/identity"
)

// Permission is one thing an admin route does.
type Permission string

const (
	ReadClusters   Permission = "clusters.read"   // list and describe clusters
	ReadOperations Permission = "operations.read" // list operations region-wide
	ReadShards     Permission = "shards.read"     // list provision shards
	WriteShards    Permission = "shards.write"    // cordon, uncordon, maintenance, offline
	// WriteClusters changes a customer's cluster or node pool as an SRE: scale, upgrade.
	WriteClusters Permission = "clusters.write"
	ReadAudit     Permission = "audit.read" // read the audit log
	// RevokeIdentities puts an SRE on the revocation list (a leaked certificate).
	RevokeIdentities Permission = "identities.revoke"
	// MustGather is a cluster's must-gather: its documents and every log line naming it.
	MustGather Permission = "clusters.mustgather"
	// Break-glass (docs/sre.md#break-glass): see SRE credentials, ask for a read-only one, ask for
	// an admin one, approve another SRE's admin request, revoke them.
	ReadBreakGlass         Permission = "breakglass.read"
	RequestBreakGlass      Permission = "breakglass.request"
	RequestBreakGlassAdmin Permission = "breakglass.request-admin"
	ApproveBreakGlass      Permission = "breakglass.approve"
	RevokeBreakGlass       Permission = "breakglass.revoke"
	// WriteMaintenance asks the maintenance service to create, resume or cancel a campaign.
	WriteMaintenance Permission = "maintenance.write"
)

// The SRE groups (a certificate's subject organisation).
const (
	GroupReadOnly = "sre-readonly" // on-call engineers: see everything, change nothing
	GroupAdmin    = "sre-admin"    // operators: also change shards, clusters and maintenance
)

// Groups lists, per group, what its members may do. Change it here only; docs/sre.md shows it
// and TestGroupsTableIsDocumented keeps the two equal.
var Groups = map[string][]Permission{
	GroupReadOnly: {ReadClusters, ReadOperations, ReadShards, ReadAudit, MustGather, ReadBreakGlass, RequestBreakGlass},
	GroupAdmin: {ReadClusters, ReadOperations, ReadShards, WriteShards, ReadAudit, MustGather, RevokeIdentities, WriteClusters,
		ReadBreakGlass, RequestBreakGlass, RequestBreakGlassAdmin, ApproveBreakGlass, RevokeBreakGlass, WriteMaintenance},
}

// Identity is a verified SRE.
type Identity struct {
	Person string `json:"person"`
	Group  string `json:"group"`
}

// May reports whether the identity's group grants p.
func (id Identity) May(p Permission) bool { return slices.Contains(Groups[id.Group], p) }

// ErrNoIdentity is wrapped by Identify's errors: the caller is not an SRE (401).
var ErrNoIdentity = errors.New("no SRE identity")

// Identify reads the SRE identity from a connection's verified client certificate. The
// listener verified the chain against the person CA; Identify reads the subject, and refuses
// a common name that is not a person's (identity.ValidPerson), a SPIFFE ID, and a chain that is
// no longer within its validity (the connection may be older than the certificate's NotAfter). A
// certificate of another kind (ARM's, a service's: no SRE group as its organisation) is no SRE
// identity.
func Identify(cs *tls.ConnectionState) (Identity, error) {
	if cs == nil || len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return Identity{}, fmt.Errorf("%w: the request has no verified client certificate", ErrNoIdentity)
	}
	// The handshake verified the chain once; a kept-alive connection is served long after, so
	// the chain must still be valid at this request.
	if err := identity.CheckValidAt(cs.VerifiedChains, time.Now()); err != nil {
		return Identity{}, fmt.Errorf("%w: %w", ErrNoIdentity, err)
	}
	leaf := cs.VerifiedChains[0][0]
	subj := leaf.Subject
	// Go reads the last of several common names, OpenSSL-based tools the first: a subject with
	// two (CN=alice, CN=bob) would name one person here and another elsewhere. Our PKI makes
	// subjects itself; an issuer that copies a request's subject could sign one.
	if n := commonNames(subj); n > 1 {
		return Identity{}, fmt.Errorf("%w: the client certificate's subject has %d common names; a person's has one", ErrNoIdentity, n)
	}
	// The listener trusts the person CA only, which issues no other name; this holds even if it
	// had. A name outside the rule could not be revoked or named in a break-glass session.
	if err := identity.ValidPerson(subj.CommonName); err != nil {
		return Identity{}, fmt.Errorf("%w: the client certificate's subject names no person: %w", ErrNoIdentity, err)
	}
	if len(leaf.URIs) > 0 {
		return Identity{}, fmt.Errorf("%w: the certificate of %q carries URIs (a workload's identity), a person's never does", ErrNoIdentity, subj.CommonName)
	}
	if len(subj.Organization) != 1 {
		return Identity{}, fmt.Errorf("%w: the client certificate of %q must name exactly one SRE group as its organisation, it names %d", ErrNoIdentity, subj.CommonName, len(subj.Organization))
	}
	group := subj.Organization[0]
	if _, ok := Groups[group]; !ok {
		return Identity{}, fmt.Errorf("%w: %q is not an SRE group (certificate of %q)", ErrNoIdentity, group, subj.CommonName)
	}
	return Identity{Person: subj.CommonName, Group: group}, nil
}

// oidCommonName is the X.520 commonName attribute type.
var oidCommonName = asn1.ObjectIdentifier{2, 5, 4, 3}

// commonNames counts the common name attributes of a subject as it was parsed.
func commonNames(n pkix.Name) int {
	c := 0
	for _, a := range n.Names {
		if a.Type.Equal(oidCommonName) {
			c++
		}
	}
	return c
}
