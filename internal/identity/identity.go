// Package identity names the region's workloads as a service mesh does: a SPIFFE ID,
// spiffe://<trust domain>/ns/<namespace>/sa/<service account>, carried as the one URI SAN of
// each workload's certificate. It owns the list of workloads and their names; servers
// authorize a caller on that ID (and on the CA that issued it), never on a common name.
package identity

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// DefaultTrustDomain is Istio's default and the region's (config/config.yaml, mesh.trustDomain).
const DefaultTrustDomain = "cluster.local"

// ID is a workload's SPIFFE ID.
type ID struct {
	TrustDomain    string
	Namespace      string
	ServiceAccount string
}

// String is the ID's URI form.
func (id ID) String() string {
	return "spiffe://" + id.TrustDomain + "/ns/" + id.Namespace + "/sa/" + id.ServiceAccount
}

// URL is the ID as a URL, for a certificate's URIs.
func (id ID) URL() *url.URL {
	return &url.URL{Scheme: "spiffe", Host: id.TrustDomain, Path: "/ns/" + id.Namespace + "/sa/" + id.ServiceAccount}
}

// Parse reads a SPIFFE ID of the form the region issues; anything else (another scheme, a port,
// user info, a query, a fragment, another path shape, characters outside [a-z0-9.-_]) is an
// error.
func Parse(s string) (ID, error) {
	u, err := url.Parse(s)
	if err != nil {
		return ID{}, fmt.Errorf("parse SPIFFE ID: %w", err)
	}
	if u.Scheme != "spiffe" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || u.Port() != "" {
		return ID{}, fmt.Errorf("parse SPIFFE ID %q: not spiffe://<trust domain>/ns/<namespace>/sa/<service account>", s)
	}
	parts := strings.Split(u.Path, "/")
	if len(parts) != 5 || parts[0] != "" || parts[1] != "ns" || parts[3] != "sa" {
		return ID{}, fmt.Errorf("parse SPIFFE ID %q: path is not /ns/<namespace>/sa/<service account>", s)
	}
	id := ID{TrustDomain: u.Host, Namespace: parts[2], ServiceAccount: parts[4]}
	for _, seg := range []string{id.TrustDomain, id.Namespace, id.ServiceAccount} {
		if !validSegment(seg) {
			return ID{}, fmt.Errorf("parse SPIFFE ID %q: %q is empty or holds a character outside [a-z0-9.-_]", s, seg)
		}
	}
	// The URL parser decodes percent-escapes and lower-cases the scheme: "…/sa/ad%6Din" and
	// "SPIFFE://…" would read as another spelling of a workload's ID. The SPIFFE ID
	// specification forbids both, and a verifier that compares strings would see another
	// principal than our doors do: only the canonical form is an ID.
	if s != id.String() {
		return ID{}, fmt.Errorf("parse SPIFFE ID %q: not in canonical form (%s): no percent-escape, a lower-case scheme", s, id)
	}
	return id, nil
}

func validSegment(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// ServerDomain is the DNS domain of the region's server names (ServerName).
const ServerDomain = "openhcp.local"

// ServerName is the one DNS name a service's server certificate answers to, and the name a
// client sets as tls.Config.ServerName when it means to reach that service, whatever address
// it dials: "<service>.openhcp.local" (cluster-service.openhcp.local). service is a workload's
// name or a server the region runs without a workload identity ("broker", "postgres").
// Every server of the local region listens on 127.0.0.1 and chains to one service CA, so the
// name, not the address, tells one server's certificate from another's. A region has its own
// service CA, so the names need no region label.
func ServerName(service string) string { return service + "." + ServerDomain }

// Workload is one of the region's workloads: Name is what authorization tables and the local
// PKI's files call it; Namespace and ServiceAccount are its Kubernetes identity
// (config/config.yaml's workloadIdentities, which TestWorkloadsMatchConfig keeps in step).
type Workload struct {
	Name, Namespace, ServiceAccount string
}

// The workloads' names.
const (
	Frontend       = "frontend"
	Backend        = "backend"
	ClusterService = "cluster-service"
	// SRE is the admin API's workload as Cluster Service knows it: the admin API acts for SREs.
	// Its certificate (the local PKI's "sre" identity) carries the admin workload's ID.
	SRE           = "sre"
	MaestroServer = "maestro-server"
	// MaestroAgent is every management cluster's Maestro agent; the broker tells agents apart
	// by their certificates' common names (their consumer names).
	MaestroAgent = "maestro-agent"
	// Prometheus is the region's monitoring: it scrapes every service over mutual TLS with this
	// workload's certificate and serves its own API to SRE persons only.
	Prometheus = "prometheus"
	// Gateway is the break-glass gateway (admin/cmd/gateway): SREs' only path into hosted
	// clusters. It runs beside the admin API, under its own service account.
	Gateway = "gateway"
	// Monitor is the fleet Monitor (backend/cmd/monitor): it runs beside the backend, under its
	// own service account, and only lists what Cluster Service has observed.
	Monitor = "monitor"
	// Maintenance is the maintenance service (backend/cmd/maintenance): it runs beside the
	// backend, under its own service account, and calls only what its task types and campaigns
	// need (reads, and UpdateCluster for an upgrade).
	Maintenance = "maintenance"
)

// Workloads lists the region's workloads whose certificates carry a SPIFFE ID.
func Workloads() []Workload {
	return []Workload{
		{Frontend, "openhcp-frontend", "frontend"},
		{Backend, "openhcp-backend", "backend"},
		{Monitor, "openhcp-backend", "monitor"},
		{Maintenance, "openhcp-backend", "maintenance"},
		{ClusterService, "openhcp-cluster-service", "cluster-service"},
		{SRE, "openhcp-admin", "admin"},
		{Gateway, "openhcp-admin", "gateway"},
		{MaestroServer, "openhcp-maestro", "maestro-server"},
		{MaestroAgent, "maestro", "maestro-agent"},
		{Prometheus, "monitoring", "prometheus"},
	}
}

// Of is the ID of the named workload in trustDomain.
func Of(name, trustDomain string) (ID, bool) {
	for _, w := range Workloads() {
		if w.Name == name {
			return ID{TrustDomain: trustDomain, Namespace: w.Namespace, ServiceAccount: w.ServiceAccount}, true
		}
	}
	return ID{}, false
}

// NameOf is the name of the workload id belongs to, if id is in trustDomain.
func NameOf(id ID, trustDomain string) (string, bool) {
	if id.TrustDomain != trustDomain {
		return "", false
	}
	for _, w := range Workloads() {
		if w.Namespace == id.Namespace && w.ServiceAccount == id.ServiceAccount {
			return w.Name, true
		}
	}
	return "", false
}

// Reserved reports whether name is a workload's (or one of their service accounts'), or
// another name a service goes by, in any letter case: a person can never be issued it.
func Reserved(name string) bool {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, w := range Workloads() {
		if n == w.Name || n == w.ServiceAccount {
			return true
		}
	}
	if slices.Contains(otherServiceNames, n) {
		return true
	}
	return strings.HasPrefix(n, "system:") || strings.HasPrefix(n, "maestro-")
}

// otherServiceNames are names of services without a workload identity (ARM's certificate, the
// broker, the database) and of privileged accounts, in lower case.
var otherServiceNames = []string{"admin", "arm", "broker", "postgres", "system", "root"}

// MaxPersonLen is the longest person name, in bytes.
const MaxPersonLen = 128

// ErrNotPerson is wrapped by ValidPerson's errors.
var ErrNotPerson = errors.New("not a person's name")

// ValidPerson is the one rule for an SRE person's name: a person certificate's common name,
// the person a revocation or a break-glass session names. It is 1 to MaxPersonLen ASCII
// letters, digits and "._@-", starts with a letter or digit, does not end with a dot, and is
// not Reserved. A positive rule, so that a name that looks like a service's to a reader (a
// trailing dot, an invisible or look-alike character) is no person at all; and every door
// that admits a person admits only names that can also be revoked.
func ValidPerson(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrNotPerson)
	case len(name) > MaxPersonLen:
		return fmt.Errorf("%w: %d bytes, at most %d", ErrNotPerson, len(name), MaxPersonLen)
	case !isPersonStart(name[0]):
		return fmt.Errorf("%w: %q must start with an ASCII letter or digit", ErrNotPerson, name)
	case name[len(name)-1] == '.':
		return fmt.Errorf("%w: %q must not end with a dot", ErrNotPerson, name)
	}
	for i, r := range name {
		if r >= utf8.RuneSelf || !isPersonStart(byte(r)) && !strings.ContainsRune("._@-", r) {
			return fmt.Errorf("%w: %q holds %q at byte %d; a person's name is ASCII letters, digits and ._@-", ErrNotPerson, name, r, i)
		}
	}
	if Reserved(name) {
		return fmt.Errorf("%w: %q is a service's name, never a person's", ErrNotPerson, name)
	}
	return nil
}

func isPersonStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// ErrNoID is returned for a certificate that carries no single SPIFFE ID.
var ErrNoID = errors.New("certificate carries no workload identity (exactly one spiffe:// URI SAN)")

// FromCertificate is the SPIFFE ID of a certificate: its one spiffe URI SAN.
func FromCertificate(c *x509.Certificate) (ID, error) {
	var found []string
	for _, u := range c.URIs {
		if u.Scheme == "spiffe" {
			found = append(found, u.String())
		}
	}
	if len(found) != 1 {
		return ID{}, ErrNoID
	}
	return Parse(found[0])
}

// FromVerifiedChains is the SPIFFE ID of the leaf of a handshake's verified chains; without a
// verified chain it is ErrNoID.
func FromVerifiedChains(chains [][]*x509.Certificate) (ID, error) {
	if len(chains) == 0 || len(chains[0]) == 0 {
		return ID{}, ErrNoID
	}
	return FromCertificate(chains[0][0])
}

// ErrNotValidNow is wrapped by CheckValidAt's error: no verified chain is within its validity at
// the time asked.
var ErrNotValidNow = errors.New("client certificate is not valid now")

// CheckValidAt is nil if at least one of a handshake's verified chains is valid at now: every
// certificate in it, leaf to root, has NotBefore <= now <= NotAfter (as crypto/x509 reads a
// validity period). The handshake checked this once; a kept-alive connection is served long
// after, so every door that reads a caller's identity per request or per RPC calls this with
// the time of the request, and a certificate (or its CA) that has expired since is refused.
// Without a verified chain the answer is an error too.
func CheckValidAt(chains [][]*x509.Certificate, now time.Time) error {
	if len(chains) == 0 || len(chains[0]) == 0 {
		return fmt.Errorf("%w: no verified chain", ErrNotValidNow)
	}
	var first error
	for _, chain := range chains {
		err := chainValidAt(chain, now)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return first
}

func chainValidAt(chain []*x509.Certificate, now time.Time) error {
	if len(chain) == 0 {
		return fmt.Errorf("%w: empty chain", ErrNotValidNow)
	}
	for _, c := range chain {
		switch {
		case now.Before(c.NotBefore):
			return fmt.Errorf("%w: certificate %q is valid from %s", ErrNotValidNow, c.Subject.CommonName, c.NotBefore.UTC().Format(time.RFC3339))
		case now.After(c.NotAfter):
			return fmt.Errorf("%w: certificate %q expired at %s", ErrNotValidNow, c.Subject.CommonName, c.NotAfter.UTC().Format(time.RFC3339))
		}
	}
	return nil
}
